"""A synchronous shell onto green's task container, for agents written without asyncio.

Most agents that "run shell commands" call one blocking method per command (mini-swe-agent's
``Environment.execute``, SWE-agent's, a plain ``subprocess``-style helper). :class:`GreenShell`
is that method for a green task: each call sends ``execute`` to green over A2A (from the agent's
worker thread, on the service's event loop), with the agent's running usage, and returns green's
:class:`~services.shared.commands.CommandResult`. ``submit`` asks green to judge the answer.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from typing import Any

from a2a.types import Message, Role

from services.shared.a2a import A2APeer, message_parts, new_protocol_message
from services.shared.commands import CommandResult
from services.shared.protocol import (
    ErrorReply,
    Execute,
    Submit,
    SubmitResult,
    TaskAssignment,
    Usage,
    execute_text,
    parse_data,
)


class TaskOver(RuntimeError):
    """Green refused the request (the task ended, a limit, a wrong token) or green cancelled the
    task: the agent should stop."""


class GreenShell:
    """One task's commands, run in green's container. Thread-safe counters in ``usage``."""

    def __init__(self, task: TaskAssignment, loop: asyncio.AbstractEventLoop) -> None:
        self.task = task
        self.loop = loop
        self.peer = A2APeer(task.green_url, timeout=max(60.0, task.limits.command_timeout_s + 30))
        self.usage = Usage()
        self.commands = 0
        self.cancelled = threading.Event()
        self._lock = threading.Lock()
        self._pending: Future[Any] | None = None

    def add_usage(self, tokens_in: int = 0, tokens_out: int = 0, cost: float = 0.0) -> None:
        """Count one model call (the adapter reads the numbers from the agent's LLM layer)."""
        with self._lock:
            u = self.usage
            self.usage = Usage(
                steps=u.steps + 1,
                tokens_in=u.tokens_in + max(0, int(tokens_in or 0)),
                tokens_out=u.tokens_out + max(0, int(tokens_out or 0)),
                cost=u.cost + max(0.0, float(cost or 0.0)),
            )

    def execute(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run ``command`` (``bash -c``, cwd = the task's workspace); blocks until green answers."""
        req = Execute(command=command, timeout=timeout, token=self.task.token, usage=self.usage)
        reply = self._ask(execute_text(command), req.model_dump(exclude_none=True))
        if not isinstance(reply, CommandResult):
            raise TaskOver(f"unexpected reply to execute: {type(reply).__name__}")
        self.commands += 1
        return reply

    def submit(self) -> SubmitResult:
        """Ask green to judge the answer the agent left (loc.json, or the repository's diff)."""
        u = self.usage
        req = Submit(token=self.task.token, **u.model_dump())
        reply = self._ask("submit", req.model_dump())
        if not isinstance(reply, SubmitResult):
            raise TaskOver(f"unexpected reply to submit: {type(reply).__name__}")
        return reply

    def _ask(self, text: str, data: dict[str, Any]) -> object:
        if self.cancelled.is_set():
            raise TaskOver("green cancelled the task")
        msg = new_protocol_message(text, data, context_id=self.task.task_id, role=Role.ROLE_USER)
        self._pending = asyncio.run_coroutine_threadsafe(self.peer.send(msg), self.loop)
        try:
            reply = self._pending.result()
        except Exception as exc:  # cancelled, or green unreachable
            raise TaskOver(f"green did not answer: {type(exc).__name__}: {exc}") from exc
        payload = message_parts(reply if isinstance(reply, Message) else None)
        if payload.data is None:
            raise TaskOver(f"green answered without data: {payload.text[:200]}")
        parsed = parse_data(payload.data)
        if isinstance(parsed, ErrorReply):
            raise TaskOver(parsed.message)
        return parsed

    def cancel(self) -> None:
        """Green ended the task: the running request is dropped, the next one raises."""
        self.cancelled.set()
        if self._pending is not None:
            self._pending.cancel()

    async def aclose(self) -> None:
        await self.peer.aclose()
