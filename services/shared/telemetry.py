"""Opt-in OpenTelemetry traces with the GenAI semantic conventions, for both services.

Off unless ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set:
then, and only then, the OpenTelemetry SDK is imported and each service gets its own tracer
provider (``service.name`` ``arena-green`` / ``arena-purple`` unless ``OTEL_SERVICE_NAME`` says
otherwise) exporting OTLP/HTTP protobuf in batches. The process-wide provider is left alone, so
the A2A SDK's own spans stay unrecorded and green and purple in one process keep their names.

One trace per task: green opens the task span (:meth:`Tracing.span`, a new trace) and sends
purple the W3C ``traceparent`` of it with the hand-over (:func:`traceparent`, nothing else: no
baggage, no ``tracestate``); purple opens ``invoke_agent`` as its child. Inside a service's span
the helpers below find their tracer through a context variable, so the code that calls a model
or runs a command only says what happened (:func:`chat`, :func:`tool`); with tracing off they
return :data:`OFF`, which does nothing.

Prompts, replies, commands and their output are recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true (:meth:`Note.content`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.shared.logging import get_logger

log = get_logger("services.shared.telemetry")

TRACEPARENT = "traceparent"


class TracingSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=".env", extra="ignore", use_attribute_docstrings=True
    )

    otel_exporter_otlp_endpoint: str | None = None
    """OpenTelemetry collector (OTLP over HTTP, protobuf), e.g. http://127.0.0.1:4318: set, both
    services send one trace per task to <endpoint>/v1/traces; unset, no tracing at all."""
    otel_exporter_otlp_traces_endpoint: str | None = None
    """The full traces URL, when it is not <endpoint>/v1/traces (also turns tracing on)."""
    otel_exporter_otlp_headers: SecretStr | None = None
    """Headers of every export, as key=value pairs joined by commas (a collector's API key)."""
    otel_service_name: str | None = None
    """service.name of the spans; default arena-green and arena-purple."""
    otel_sdk_disabled: bool = False
    """true: no tracing, even with an endpoint set."""
    otel_instrumentation_genai_capture_message_content: bool = False
    """true: spans also carry the prompts, the model's replies, the commands and their output
    (gen_ai.input.messages, gen_ai.output.messages, gen_ai.tool.call.arguments/result)."""

    def traces_endpoint(self) -> str | None:
        """Where spans go; None when tracing is off."""
        if self.otel_sdk_disabled:
            return None
        if self.otel_exporter_otlp_traces_endpoint:
            return self.otel_exporter_otlp_traces_endpoint
        if self.otel_exporter_otlp_endpoint:
            return self.otel_exporter_otlp_endpoint.rstrip("/") + "/v1/traces"
        return None

    def headers(self) -> dict[str, str]:
        raw = (
            self.otel_exporter_otlp_headers.get_secret_value()
            if self.otel_exporter_otlp_headers
            else ""
        )
        pairs = (item.split("=", 1) for item in raw.split(",") if "=" in item)
        return {k.strip(): v.strip() for k, v in pairs if k.strip()}


class Note:
    """What a span is told as the work it covers goes on, in the arena's words; the semantic
    conventions' names stay in this module. Content is kept only when capture is on."""

    def __init__(self, span: Any, capture: bool) -> None:
        self.span, self.capture = span, capture

    def set(self, attributes: Mapping[str, Any]) -> None:
        """Attributes by name (``None`` values are skipped)."""
        for key, value in attributes.items():
            if value is not None:
                self.span.set_attribute(key, value)

    def content(self, key: str, value: Any) -> None:
        """A content attribute (JSON unless text), kept only when capture is on."""
        if self.capture and value is not None:
            self.span.set_attribute(key, value if isinstance(value, str) else json.dumps(value))

    def usage(self, tokens_in: int, tokens_out: int) -> None:
        self.set({"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out})

    def reply(
        self,
        *,
        model: str | None,
        response_id: str | None,
        finish_reason: str | None,
        tokens_in: int,
        tokens_out: int,
        message: Mapping[str, Any],
    ) -> None:
        """A model's reply: the model that answered, its id, why it stopped, its usage, and
        (captured) the message itself."""
        self.set(
            {
                "gen_ai.response.model": model,
                "gen_ai.response.id": response_id,
                "gen_ai.response.finish_reasons": [finish_reason] if finish_reason else None,
            }
        )
        self.usage(tokens_in, tokens_out)
        if self.capture:
            said = {**_message(message), "finish_reason": finish_reason or ""}
            self.content("gen_ai.output.messages", [said])

    def command(self, *, exit_code: int, timed_out: bool, truncated: bool, output: str) -> None:
        """A command's result; its output only when captured."""
        self.set(
            {
                "arena.command.exit_code": exit_code,
                "arena.command.timed_out": timed_out,
                "arena.command.truncated": truncated,
            }
        )
        self.content("gen_ai.tool.call.result", output)

    def ended(self, status: str, reason: str | None, *, error: bool = False) -> None:
        """How the task ended; ``error``: as a failure (``error.type`` is the reason)."""
        self.set({"arena.task.status": status, "arena.task.end_reason": reason})
        if error:
            from opentelemetry.trace import Status, StatusCode

            self.set({"error.type": reason or status})
            self.span.set_status(Status(StatusCode.ERROR, reason or status))


class _Off(Note):
    """The note of a span that is not recorded: every call does nothing."""

    def __init__(self) -> None:
        super().__init__(None, False)

    def set(self, attributes: Mapping[str, Any]) -> None:
        pass

    def content(self, key: str, value: Any) -> None:
        pass

    def ended(self, status: str, reason: str | None, *, error: bool = False) -> None:
        pass


OFF: Note = _Off()
_NOTHING = nullcontext(OFF)
"""What every helper returns while no tracing is active (reusable: it only hands out OFF)."""


@dataclass(frozen=True)
class _Active:
    tracer: Any
    capture: bool


_ACTIVE: ContextVar[_Active | None] = ContextVar("arena_tracing", default=None)


class Tracing:
    """One service's tracing: :attr:`enabled` only when the settings name an endpoint."""

    def __init__(self, service: str, settings: TracingSettings | None = None) -> None:
        settings = settings or TracingSettings()
        self._active: _Active | None = None
        self._provider: Any = None
        endpoint = settings.traces_endpoint()
        if endpoint is None:
            return
        # Imported here: a service with tracing off never loads the SDK.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        name = settings.otel_service_name or service
        self._provider = TracerProvider(resource=Resource.create({"service.name": name}))
        exporter = OTLPSpanExporter(endpoint=endpoint, headers=settings.headers() or None)
        self._provider.add_span_processor(BatchSpanProcessor(exporter))
        capture = settings.otel_instrumentation_genai_capture_message_content
        self._active = _Active(self._provider.get_tracer("arena"), capture)
        log.info("tracing.on", service_name=name, endpoint=endpoint, content=capture)

    @classmethod
    def off(cls) -> Tracing:
        """Tracing that is off whatever the environment says."""
        return cls("", TracingSettings(otel_sdk_disabled=True))

    @property
    def enabled(self) -> bool:
        return self._active is not None

    def task(self, task_id: str, kind: str, ref: str) -> AbstractContextManager[Note]:
        """Green's span of one task, the root of the task's trace."""
        return self._top(
            "arena.task",
            None,
            {
                "gen_ai.conversation.id": task_id,
                "arena.task.id": task_id,
                "arena.task.kind": kind,
                "arena.task.ref": ref,
            },
        )

    def invoke_agent(
        self, agent: str, task_id: str, headers: Mapping[str, str], model: str | None
    ) -> AbstractContextManager[Note]:
        """Purple's ``invoke_agent`` span of one task: the child of the ``traceparent`` among
        the ``headers`` of green's hand-over (a trace of its own without one)."""
        return self._top(
            f"invoke_agent {agent}",
            headers.get(TRACEPARENT),
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": task_id,
                "gen_ai.provider.name": "openai" if model else None,
                "gen_ai.request.model": model,
            },
        )

    def _top(
        self, name: str, parent: str | None, attributes: dict[str, Any]
    ) -> AbstractContextManager[Note]:
        if self._active is None:
            return _NOTHING
        return self._span(self._active, name, parent, attributes)

    @contextmanager
    def _span(
        self, active: _Active, name: str, parent: str | None, attributes: dict[str, Any]
    ) -> Iterator[Note]:
        from opentelemetry import context
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier = {TRACEPARENT: parent} if parent else {}
        remote = TraceContextTextMapPropagator().extract(carrier, context=context.Context())
        # How the work ended is the caller's to say (Note.ended): a cancel is no error here.
        with active.tracer.start_as_current_span(
            name, context=remote, record_exception=False, set_status_on_exception=False
        ) as span:
            token = _ACTIVE.set(active)
            try:
                note = Note(span, active.capture)
                note.set(attributes)
                yield note
            finally:
                _ACTIVE.reset(token)

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Send what is still buffered, then stop (blocking: call it off the event loop)."""
        if self._provider is not None:
            self._provider.force_flush(int(timeout_s * 1000))
            self._provider.shutdown()
            self._provider, self._active = None, None


def chat(
    model: str, *, base_url: str | None, messages: Any, **request: Any
) -> AbstractContextManager[Note]:
    """A ``chat`` span for one LLM call (its retries included): the model, the server and the
    sampling settings sent (``temperature=...``: ``gen_ai.request.temperature``); the prompt
    when captured. The reply goes to :meth:`Note.reply`."""
    active = _ACTIVE.get()
    if active is None:
        return _NOTHING
    server = urlsplit(base_url or "https://api.openai.com/v1")
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": model,
        "server.address": server.hostname,
        "server.port": server.port or (443 if server.scheme == "https" else 80),
        **{f"gen_ai.request.{k}": v for k, v in request.items()},
    }
    prompt = [_message(m) for m in messages] if active.capture else None
    return _child(active, f"chat {model}", "CLIENT", attributes, "gen_ai.input.messages", prompt)


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI chat message in the conventions' form: a role and typed parts (text, the
    model's tool calls, a tool's answer)."""
    parts: list[dict[str, Any]] = []
    if message.get("role") == "tool":
        parts.append(
            {
                "type": "tool_call_response",
                "id": message.get("tool_call_id"),
                "response": message.get("content"),
            }
        )
    elif message.get("content"):
        parts.append({"type": "text", "content": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        parts.append(
            {
                "type": "tool_call",
                "id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments"),
            }
        )
    return {"role": message.get("role"), "parts": parts}


def tool(name: str, call_id: str | None, command: str) -> AbstractContextManager[Note]:
    """An ``execute_tool`` span for one command, run for tool ``name`` (``call_id``: the
    model's tool call, when one asked for it); the command itself when captured. The result
    goes to :meth:`Note.command`."""
    active = _ACTIVE.get()
    if active is None:
        return _NOTHING
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": call_id,
    }
    return _child(
        active,
        f"execute_tool {name}",
        "INTERNAL",
        attributes,
        "gen_ai.tool.call.arguments",
        command,
    )


@contextmanager
def _child(
    active: _Active, name: str, kind: str, attributes: dict[str, Any], key: str, content: Any
) -> Iterator[Note]:
    from opentelemetry import trace

    with active.tracer.start_as_current_span(name, kind=getattr(trace.SpanKind, kind)) as span:
        note = Note(span, active.capture)
        note.set(attributes)
        note.content(key, content)
        try:
            yield note
        except Exception as exc:  # recorded, with its status, by the span itself
            span.set_attribute("error.type", type(exc).__name__)
            raise


def traceparent() -> dict[str, str]:
    """The W3C ``traceparent`` header of the current span of this module's tracing (empty when
    there is none): what green sends purple with a task."""
    if _ACTIVE.get() is None:
        return {}
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier)
    return {TRACEPARENT: carrier[TRACEPARENT]} if TRACEPARENT in carrier else {}
