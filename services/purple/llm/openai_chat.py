"""Any OpenAI-compatible chat endpoint through the ``openai`` package.

The SDK's own retries are off (``max_retries=0``); :meth:`OpenAIChatModel.query` retries
transient failures itself (429, 408/409, 5xx, connection errors) with exponential backoff and
jitter, honouring ``Retry-After``, so every attempt is logged and the policy is in one place.
A request that *timed out* is not re-sent by default (``timeout_retries``): a busy local server
keeps generating the abandoned reply, so a copy would only queue behind it. Every retry is
listed in the reply (``LLMReply.retries``, written to the trajectory). Other errors (400, 401,
404, ...) raise :class:`LLMError` at once; a context overflow raises :class:`ContextOverflow`.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
import uuid
from typing import Any

import httpx
import openai
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

from services.purple.llm.base import ContextOverflow, LLMError, LLMReply, ToolCall
from services.purple.llm.pricing import cost_of, lookup_price
from services.shared import telemetry
from services.shared.http import async_client, shared_tls
from services.shared.logging import get_logger

log = get_logger(__name__)

TRANSIENT_STATUS = {408, 409, 425, 429}
REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Where servers put a reply's reasoning (vLLM, llama.cpp, DeepSeek; OpenRouter), first found."""

_OVERFLOW_RE = re.compile(
    r"context_length_exceeded|maximum context length|context window|context length|"
    r"prompt is too long|too many tokens|exceeds? the model",
    re.IGNORECASE,
)
_WINDOW_RE = re.compile(
    r"(?:context window of|maximum context length is|context length (?:is|of))\s*(\d+)",
    re.IGNORECASE,
)


_SEARCH_MODEL = re.compile(r"search-preview|search-api|:online$", re.IGNORECASE)
HOSTED_TOOL_FIELDS = frozenset(
    {"web_search_options", "plugins", "tools", "search_parameters", "enable_search"}
)
"""Request fields that would hand the model a hosted tool (OpenAI, OpenRouter, xAI, Qwen)."""


class OpenAIModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("model")
    @classmethod
    def _no_search_model(cls, model: str) -> str:
        if _SEARCH_MODEL.search(model):
            raise ValueError(f"{model!r} searches the web by itself: hosted tools are refused")
        return model

    @field_validator("extra_body")
    @classmethod
    def _no_hosted_tools(cls, body: dict[str, Any]) -> dict[str, Any]:
        if named := sorted(HOSTED_TOOL_FIELDS & set(body)):
            raise ValueError(f"extra_body may not set {', '.join(named)}: hosted tools are refused")
        return body

    model: str
    """Model name sent to the endpoint (also the key of the price table)."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (``OPENAI_BASE_URL``); None = api.openai.com."""
    api_key: SecretStr | None = None
    """``OPENAI_API_KEY``; local servers that need none get a placeholder."""
    timeout_s: float = Field(180.0, gt=0)
    """Timeout of one HTTP request."""
    max_retries: int = Field(6, ge=0)
    """Retries of a transient failure before giving up."""
    timeout_retries: int = Field(0, ge=0)
    """Times a request that timed out is sent again (0: never; the server may still be working
    on it, and a copy would queue behind it)."""
    backoff_initial_s: float = Field(1.0, ge=0)
    """First retry delay; doubles each attempt (with jitter)."""
    backoff_max_s: float = Field(60.0, ge=0)
    """Longest delay between two attempts (also caps Retry-After)."""
    temperature: float | None = None
    """Sampling temperature; None = the endpoint's default."""
    top_p: float | None = None
    """Nucleus sampling; None = the endpoint's default."""
    seed: int | None = None
    """Sampling seed (servers that honour it answer reproducibly); None = none sent."""
    max_tokens: int | None = None
    """Most completion tokens per reply; None = the endpoint's default."""
    stop: list[str] | None = None
    """Stop sequences (text mode may use ``----END_FUNCTION_CALL----``)."""
    extra_body: dict[str, Any] = {}
    """Extra request fields for non-OpenAI servers (e.g. ``{"top_k": 20}``)."""
    prices: dict[str, tuple[float, float]] = {}
    """Extra or overriding prices: model -> (USD per M input tokens, per M output tokens)."""


class OpenAIChatModel:
    def __init__(self, config: OpenAIModelConfig, client: openai.AsyncOpenAI | None = None) -> None:
        self.config = config
        self.name = config.model
        key = config.api_key.get_secret_value() if config.api_key else None
        self.client = client or openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=key or "not-needed",
            timeout=config.timeout_s,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(**shared_tls({})),  # one per task
        )
        self._window: int | None = None

    async def context_window(self) -> int | None:
        """The model's context window as the server tells it, else None: vLLM's ``/v1/models``
        (``max_model_len``), llama.cpp's ``/props`` (``n_ctx``). Asked once per model."""
        if self._window is None:
            self._window = await probe_window(self.client, self.config.model) or 0
        return self._window or None

    def serialize(self) -> dict[str, Any]:
        """The config without secrets, for trajectories."""
        return {"class": type(self).__name__, **self.config.model_dump(exclude={"api_key"})}

    async def query(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> LLMReply:
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        for key in ("temperature", "top_p", "seed", "max_tokens", "stop"):
            if (value := getattr(self.config, key)) is not None:
                kwargs[key] = value
        if self.config.extra_body:
            kwargs["extra_body"] = self.config.extra_body
        with self._traced(messages) as span:
            response, retries, duration = await self._create(kwargs)
            reply = self._reply(response, duration)
            span.reply(
                model=getattr(response, "model", None),
                response_id=getattr(response, "id", None),
                finish_reason=reply.finish_reason,
                tokens_in=reply.tokens_in,
                tokens_out=reply.tokens_out,
                message=reply.assistant_message(),
            )
        reply.retries = retries
        return reply

    def _traced(self, messages: list[dict[str, Any]]) -> Any:
        """The call's ``chat`` span (:mod:`services.shared.telemetry`; nothing when off)."""
        c = self.config
        return telemetry.chat(
            c.model,
            base_url=c.base_url,
            messages=messages,
            temperature=c.temperature,
            top_p=c.top_p,
            seed=c.seed,
            max_tokens=c.max_tokens,
            stop_sequences=c.stop,
        )

    async def _create(self, kwargs: dict[str, Any]) -> tuple[Any, list[str], float]:
        """The completion, with the retries it took and how long all of it took."""
        start = time.monotonic()
        attempt, timeouts, retries = 0, 0, []
        while True:
            try:
                response = await self.client.chat.completions.create(**kwargs)
                break
            except openai.APITimeoutError as exc:
                if timeouts >= self.config.timeout_retries:
                    raise LLMError(
                        f"the model did not answer within {self.config.timeout_s:g} s; not sent "
                        f"again (timeout_retries={self.config.timeout_retries})"
                        + (f" after {len(retries)} retries" if retries else "")
                    ) from exc
                timeouts += 1
                retries.append(self._retrying(exc, 0.0, len(retries) + 1))
            except openai.APIError as exc:
                if not _transient(exc):
                    raise _error(exc) from exc
                if attempt >= self.config.max_retries:
                    raise LLMError(
                        f"gave up after {attempt + 1} attempts: {type(exc).__name__}: {exc}"
                    ) from exc
                delay = self._delay(attempt, exc)
                attempt += 1
                retries.append(self._retrying(exc, delay, len(retries) + 1))
                await asyncio.sleep(delay)
        return response, retries, time.monotonic() - start

    def _retrying(self, exc: Exception, delay: float, attempt: int) -> str:
        error = f"{type(exc).__name__}: {exc}"[:300]
        log.warning(
            "llm transient error; retrying",
            model=self.name,
            error=error,
            attempt=attempt,
            delay_s=round(delay, 2),
        )
        return f"attempt {attempt} failed ({error}); sent again after {delay:.1f} s"

    def _delay(self, attempt: int, exc: Exception) -> float:
        cap = self.config.backoff_max_s
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                return min(cap, float(headers[name]) * scale)
            except (KeyError, TypeError, ValueError):
                pass
        base = min(cap, self.config.backoff_initial_s * 2**attempt)
        return base * (0.5 + random.random() / 2)

    def _reply(self, response: Any, duration: float) -> LLMReply:
        if not getattr(response, "choices", None):
            raise LLMError(f"the endpoint returned no choices: {str(response)[:300]}")
        choice = response.choices[0]
        message = choice.message
        calls = [
            ToolCall(
                id=tc.id or f"call_{uuid.uuid4().hex[:12]}",
                name=tc.function.name or "",
                arguments=tc.function.arguments or "{}",
            )
            for tc in (message.tool_calls or [])
            if getattr(tc, "function", None) is not None
        ]
        usage = response.usage
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        reported = (getattr(usage, "model_extra", None) or {}).get("cost")
        if isinstance(reported, int | float):
            cost, source = float(reported), "server"
        else:
            cost = cost_of(self.name, tokens_in, tokens_out, self.config.prices)
            source = "prices" if lookup_price(self.name, self.config.prices) is not None else None
        cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
        reasoning = next(
            (r for k in REASONING_FIELDS if isinstance(r := _extra(message).get(k), str) and r),
            None,
        )
        return LLMReply(
            content=message.content,
            tool_calls=calls,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            usage_reported=usage is not None,
            cached_tokens=cached if isinstance(cached, int) else None,
            cost=cost,
            cost_source=source,
            reasoning=reasoning,
            finish_reason=choice.finish_reason,
            duration_s=duration,
        )


def _extra(message: Any) -> dict[str, Any]:
    """The fields of a reply's message that the openai package does not model."""
    extra = getattr(message, "model_extra", None)
    return extra if isinstance(extra, dict) else {}


def _error(exc: openai.APIError) -> LLMError:
    """The error of a refused request; a context overflow is its own kind."""
    text = f"{type(exc).__name__}: {exc}"
    code = getattr(exc, "code", None)
    if getattr(exc, "status_code", None) == 400 and (
        code == "context_length_exceeded" or _OVERFLOW_RE.search(str(exc))
    ):
        m = _WINDOW_RE.search(str(exc))
        return ContextOverflow(f"context_length_exceeded: {text}", int(m.group(1)) if m else None)
    return LLMError(text)


def _transient(exc: openai.APIError) -> bool:
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and (status in TRANSIENT_STATUS or status >= 500)


async def probe_window(client: openai.AsyncOpenAI, model: str) -> int | None:
    """Ask an OpenAI-compatible server for the model's context window (best effort, 5 s)."""
    base = str(client.base_url).rstrip("/")
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    headers = {"Authorization": f"Bearer {client.api_key}"}
    async with async_client(timeout=5.0, headers=headers) as http:
        try:
            listed = (await http.get(f"{base}/models")).json().get("data") or []
            for entry in listed:
                if isinstance(entry, dict) and entry.get("id") == model:
                    for key in ("max_model_len", "context_length", "context_window"):
                        if isinstance(entry.get(key), int) and entry[key] > 0:
                            return entry[key]
            props = (await http.get(f"{root}/props")).json()
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get(
                "n_ctx"
            )
            return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
