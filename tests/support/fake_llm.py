"""A real, local OpenAI-compatible HTTP server that plays a script (for tests and dry runs).

``POST /v1/chat/completions`` (non-streaming) answers from a queue of canned replies: text, tool
calls, or injected HTTP errors (e.g. a 429 or 500 once, to test retries). Every reply carries a
``usage`` block with the scripted token counts, and every request body is recorded, so tests
can check what the agent sent. Runs uvicorn in a background thread on 127.0.0.1, free port::

    with FakeLLMServer([FakeReply(tool_calls=[("run_bash_cmd", {"command": "ls"})])]) as llm:
        model = OpenAIChatModel(OpenAIModelConfig(model="fake", base_url=llm.base_url))
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse


@dataclass
class FakeReply:
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any] | str]] = field(default_factory=list)
    """(name, arguments); a str is sent as the raw arguments text (to test bad JSON)."""
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cost: float | None = None
    """When set, sent as ``usage.cost`` (as OpenRouter does)."""
    cached_tokens: int | None = None
    """When set, sent as ``usage.prompt_tokens_details.cached_tokens`` (as OpenAI does)."""
    reasoning: str | None = None
    """When set, sent as the message's ``reasoning_content`` (as vLLM and DeepSeek do)."""
    usage: bool = True
    """False: the answer has no ``usage`` block (as some servers send), and counts nothing."""
    delay_s: float = 0.0
    """Wait this long before answering (without blocking the server)."""


@dataclass
class FakeError:
    status: int = 500
    message: str = "injected failure"
    headers: dict[str, str] = field(default_factory=dict)
    type: str = "server_error"
    code: str | None = None
    """The error's ``code`` (OpenAI's ``context_length_exceeded``, ...), sent when set."""


Item = FakeReply | FakeError | Callable[[dict[str, Any]], "FakeReply | FakeError"]


class FakeLLMServer:
    def __init__(self, script: list[Item] | None = None, *, default: Item | None = None) -> None:
        self.script: deque[Item] = deque(script or [])
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.replies: list[FakeReply] = []
        self.errors_sent = 0
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self._completions)
        self.app.get("/v1/models")(self._models)
        self.models: list[str] = []
        """What ``GET /v1/models`` lists (empty: the server names none, as some do)."""
        self.n_ctx: int | None = None
        """When set, ``GET /props`` answers llama.cpp's way with this context window."""
        self.app.get("/props")(self._props)
        self.one_slot: asyncio.Lock | None = None
        """Set by :meth:`single_slot`: every request waits for the one before it, as on a
        llama.cpp server with one slot (``GET /v1/models`` too, while a reply is generated)."""

    def single_slot(self) -> FakeLLMServer:
        """Answer one request at a time (call before :meth:`start`)."""
        self.one_slot = asyncio.Lock()
        return self

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def usage_totals(self) -> tuple[int, int]:
        """(prompt tokens, completion tokens) the replies actually sent reported."""
        return (
            sum(r.prompt_tokens for r in self.replies if r.usage),
            sum(r.completion_tokens for r in self.replies if r.usage),
        )

    def push(self, *items: Item) -> None:
        with self._lock:
            self.script.extend(items)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeLLMServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        # A reply still "thinking" (delay_s) for a client that went away would hold the stop for
        # its whole delay: at the stop, a second's grace, then in-flight replies are cancelled.
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("fake LLM server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- the endpoint ------------------------------------------------------------------------

    async def _models(self) -> dict[str, Any]:
        if self.one_slot is not None:
            async with self.one_slot:
                pass
        return {"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]}

    async def _props(self) -> JSONResponse:
        if self.n_ctx is None:
            return JSONResponse({"error": "not found"}, status_code=404)
        return JSONResponse({"default_generation_settings": {"n_ctx": self.n_ctx}})

    async def _completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            item = self.script.popleft() if self.script else self.default
        if callable(item):
            item = item(body)
        if item is None:
            return JSONResponse(
                {
                    "error": {
                        "message": "fake LLM: script exhausted",
                        "type": "invalid_request_error",
                    }
                },
                status_code=400,
            )
        if isinstance(item, FakeError):
            self.errors_sent += 1
            error: dict[str, Any] = {"message": item.message, "type": item.type}
            if item.code is not None:
                error["code"] = item.code
            return JSONResponse(
                {"error": error},
                status_code=item.status,
                headers=item.headers,
            )
        if item.delay_s and self.one_slot is not None:
            async with self.one_slot:
                await asyncio.sleep(item.delay_s)
        elif item.delay_s:
            await asyncio.sleep(item.delay_s)
        self.replies.append(item)
        message: dict[str, Any] = {"role": "assistant", "content": item.content}
        if item.reasoning is not None:
            message["reasoning_content"] = item.reasoning
        if item.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{next(self._ids)}",
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
                for name, args in item.tool_calls
            ]
        usage: dict[str, Any] = {
            "prompt_tokens": item.prompt_tokens,
            "completion_tokens": item.completion_tokens,
            "total_tokens": item.prompt_tokens + item.completion_tokens,
        }
        if item.cost is not None:
            usage["cost"] = item.cost
        if item.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": item.cached_tokens}
        answer: dict[str, Any] = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if item.tool_calls else "stop",
                }
            ],
        }
        if item.usage:
            answer["usage"] = usage
        return JSONResponse(answer)
