"""The TaskEnvironment that runs commands in green's container over A2A."""

from __future__ import annotations

import math

from a2a.types import Message, Role

from services.purple.protocols import RunStats
from services.purple.signals import TaskEnded
from services.shared.a2a import A2APeer, message_parts, new_protocol_message
from services.shared.commands import CommandResult
from services.shared.protocol import (
    MAX_COST,
    MAX_COUNT,
    RUN_POC_TEXT,
    ErrorReply,
    Execute,
    RunPoc,
    Submit,
    SubmitResult,
    Usage,
    execute_text,
    parse_data,
)


class GreenEnvironment:
    """Sends ``execute``/``submit`` (and ``run_poc``, where the task offers it) to green in the task's context, with the task's token.

    Each request has the text form and the data form (docs/protocol.md); replies are read from the
    data part. A refusal (task over, step limit, wrong token) raises :class:`TaskEnded`. Each
    ``execute`` carries ``usage``, the run's running totals, so green records them as they accrue.
    The reply to ``execute`` is read once into the :class:`CommandResult` it is; recording it is
    the caller's (the run's :class:`~services.purple.commands.CommandLog`).
    """

    def __init__(
        self,
        green: A2APeer,
        task_id: str,
        token: str | None,
        usage: RunStats | None = None,
    ) -> None:
        self.green = green
        self.task_id = task_id
        self.token = token
        self.usage = usage

    async def _ask(self, text: str, data: dict) -> object:
        if self.token and "token" not in data:
            data["token"] = self.token
        msg = new_protocol_message(text, data, context_id=self.task_id, role=Role.ROLE_USER)
        reply = await self.green.send(msg)
        payload = message_parts(reply if isinstance(reply, Message) else None)
        if payload.data is None:
            raise TaskEnded(f"green answered without data: {payload.text[:200]}")
        parsed = parse_data(payload.data)
        if isinstance(parsed, ErrorReply):
            raise TaskEnded(parsed.message)
        return parsed

    async def execute(self, command: str, timeout: float | None = None) -> CommandResult:
        req = Execute(
            command=command, timeout=timeout, token=self.token, usage=usage_of(self.usage)
        )
        reply = await self._ask(execute_text(command), req.model_dump(exclude_none=True))
        if not isinstance(reply, CommandResult):
            raise TaskEnded(f"unexpected reply to execute: {type(reply).__name__}")
        return reply

    async def run_poc(self) -> CommandResult:
        """Ask green to run the vulnerable target on the task's PoC (where the task offers it)."""
        req = RunPoc(token=self.token, usage=usage_of(self.usage))
        reply = await self._ask(RUN_POC_TEXT, req.model_dump(exclude_none=True))
        if not isinstance(reply, CommandResult):
            raise TaskEnded(f"unexpected reply to run_poc: {type(reply).__name__}")
        return reply

    async def submit(self, stats: RunStats | None = None) -> SubmitResult:
        usage = usage_of(stats or self.usage or RunStats())
        req = Submit(token=self.token, **(usage.model_dump() if usage else {}))
        reply = await self._ask("submit", req.model_dump())
        if not isinstance(reply, SubmitResult):
            raise TaskEnded(f"unexpected reply to submit: {type(reply).__name__}")
        return reply


def usage_of(stats: RunStats | None) -> Usage | None:
    """The wire form of the run's usage (numbers clamped into what green accepts)."""
    if stats is None:
        return None
    cost = stats.cost if math.isfinite(stats.cost) else 0.0
    return Usage(
        steps=min(max(0, stats.steps), MAX_COUNT),
        tokens_in=min(max(0, stats.tokens_in), MAX_COUNT),
        tokens_out=min(max(0, stats.tokens_out), MAX_COUNT),
        cost=min(max(0.0, cost), MAX_COST),
    )
