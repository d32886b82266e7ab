"""The ReAct loop: query the model, parse its call, run the tool, observe, repeat.

One :class:`ReactAgent` serves many tasks (concurrently too); each :meth:`ReactAgent.run`
keeps its state in its own :class:`_Run`.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from services.purple.agent.compaction import Compactor, estimate_tokens
from services.purple.agent.config import AgentConfig
from services.purple.agent.errors import (
    FormatError,
    LimitsExceeded,
    Submitted,
    TooManyFormatErrors,
)
from services.purple.agent.parser import parse_text_call
from services.purple.agent.toolset import RcaToolset, Toolset
from services.purple.agent.trajectory import Trajectory
from services.purple.environment import (
    CommandRecord,
    RunResult,
    RunStats,
    TaskContext,
    TaskEnded,
)
from services.purple.llm.base import LLM, LLMReply, ToolCall
from services.shared.commands import CommandResult
from services.shared.logging import get_logger
from services.shared.text import clip_middle

log = get_logger(__name__)

Call = tuple[str | None, str, dict[str, Any] | FormatError]
"""(native tool-call id or None in text mode, tool name, arguments or what is wrong)"""


OBSERVATION_CUT = "characters cut from the middle of this output"
"""What a long observation says where its middle was cut (:func:`clip_middle`)."""


class ReactAgent:
    name = "react"

    def __init__(
        self,
        llm: LLM,
        config: AgentConfig | None = None,
        *,
        trajectory_dir: str | Path | None = None,
        toolset: Toolset | None = None,
    ) -> None:
        self.llm = llm
        self.config = config or AgentConfig()
        self.trajectory_dir = trajectory_dir
        self.toolset = toolset or RcaToolset()
        """The kind of task: tools and prompts (root-cause analysis by default)."""

    async def run(self, task: TaskContext) -> RunResult:
        return await _Run(self, task).run()


class _Run:
    def __init__(self, agent: ReactAgent, task: TaskContext) -> None:
        self.cfg, self.llm, self.task, self.name = agent.config, agent.llm, task, agent.name
        self.log = log.bind(task_id=task.task_id, policy=agent.name)
        self.stats = RunStats()
        self.start = time.monotonic()
        self.traj = Trajectory(agent.trajectory_dir, task.task_id, agent.name)
        self.toolset = agent.toolset
        self.tools = self.toolset.make_tools(
            task.env,
            task.paths,
            on_command=self._on_command,
            stats=self._stats,
            max_commands=task.max_steps,
        )
        self.registry = self.tools.registry()
        self.schemas = self.registry.schemas() if self.cfg.mode == "tool_calls" else None
        self.step_limit = self.cfg.step_limit or None  # LLM calls; green limits commands
        self.deadline = self._deadline()
        self.compactor = Compactor(self.cfg.context_budget_tokens, self.cfg.keep_last_turns)
        self.usage_anchor: tuple[int, int] | None = None  # (messages covered, their tokens)
        self.format_errors = 0
        self.messages: list[dict[str, Any]] = []
        self.context_tokens = 0  # running estimate_tokens(self.messages)

    async def run(self) -> RunResult:
        task = self.task
        self.traj.event(
            "start",
            config=self.cfg.model_dump(),
            model=_serialize(self.llm),
            toolset=self.toolset.name,
            task={
                "task_id": task.task_id,
                "paths": task.paths.model_dump(),
                "max_steps": task.max_steps,
                "deadline": task.deadline,
            },
        )
        self._add(
            {
                "role": "system",
                "content": self.toolset.system_prompt(
                    task.paths,
                    self.registry.describe(),
                    mode=self.cfg.mode,
                    step_limit=self.step_limit,
                    command_limit=task.max_steps,
                    base=self.cfg.system_prompt,
                ),
            }
        )
        self._add({"role": "user", "content": self.toolset.task_message(task.description)})
        status, reason, submission = "error", "cancelled", None
        try:
            while True:
                await self.step()
        except Submitted as exc:
            status, reason, submission = "submitted", str(exc), exc.submission
        except (LimitsExceeded, TaskEnded) as exc:
            status, reason = "limits", str(exc) or type(exc).__name__
        except TooManyFormatErrors as exc:
            status, reason = "format_errors", str(exc)
        except Exception as exc:  # a run never crashes the service; LLMError lands here too
            self.log.exception("agent run failed")
            status, reason = "error", f"{type(exc).__name__}: {exc}"
        finally:
            result = RunResult(
                task_id=self.task.task_id,
                policy=self.name,
                status=status,
                reason=reason,
                stats=self.stats,
                duration_s=time.monotonic() - self.start,
                submission=submission,
                command_history=self.tools.history,
                trajectory_path=str(self.traj.final_path) if self.traj.final_path else None,
            )
            self.traj.event("end", result=result.model_dump(exclude={"command_history"}))
            self.traj.finish(
                config=self.cfg.model_dump(),
                model=_serialize(self.llm),
                result=result.model_dump(),
                messages=self.messages,
                compactions=self.compactor.compactions,
            )
            self.log.info(
                "agent run finished",
                status=status,
                reason=reason,
                steps=self.stats.steps,
                cost=round(self.stats.cost, 4),
            )
        return result

    async def step(self) -> None:
        self._check_limits()
        self.stats.steps += 1
        self.tools.step = self.stats.steps
        self._maybe_compact()
        reply = await self._query()
        self._add(reply.assistant_message())
        calls = self._calls(reply)
        valid = 0
        for call_id, name, args in calls:
            try:
                if isinstance(args, FormatError):
                    raise args
                self.tools.command_timeout = self._command_timeout()
                output = await self.registry.call(name, args)
                valid += 1
            except FormatError as exc:  # ToolCallError is one too
                output = str(exc)
            self._observe(call_id, output)
        self.format_errors = 0 if valid else self.format_errors + 1
        if self.format_errors >= self.cfg.max_consecutive_format_errors:
            raise TooManyFormatErrors(f"{self.format_errors} unusable replies in a row")

    # ---- the pieces of a step ----------------------------------------------------------------

    def _check_limits(self) -> None:
        if self.step_limit is not None and self.stats.steps >= self.step_limit:
            raise LimitsExceeded(f"step limit ({self.step_limit}) reached")
        if self.task.max_steps and (
            len(self.tools.history) >= self.task.max_steps or self.tools.budget_refusals >= 2
        ):
            raise LimitsExceeded(f"green's command limit ({self.task.max_steps}) reached")
        if self.cfg.cost_limit and self.stats.cost >= self.cfg.cost_limit:
            raise LimitsExceeded(f"cost limit (${self.cfg.cost_limit:.2f}) reached")
        if time.monotonic() >= self.deadline:
            raise LimitsExceeded("wall-time limit reached")

    async def _query(self) -> LLMReply:
        remaining = self.deadline - time.monotonic()
        try:
            reply = await asyncio.wait_for(self.llm.query(self.messages, self.schemas), remaining)
        except TimeoutError:
            raise LimitsExceeded("wall-time limit reached while waiting for the model") from None
        self.stats.tokens_in += reply.tokens_in
        self.stats.tokens_out += reply.tokens_out
        self.stats.cost += reply.cost
        if reply.tokens_in:
            self.usage_anchor = (len(self.messages) + 1, reply.tokens_in + reply.tokens_out)
        self.traj.event(
            "llm_call",
            step=self.stats.steps,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            cost=reply.cost,
            duration_s=reply.duration_s,
            finish_reason=reply.finish_reason,
        )
        return reply

    def _calls(self, reply: LLMReply) -> list[Call]:
        if reply.tool_calls:
            return [_native_call(c) for c in reply.tool_calls]
        try:  # text mode, and the textual fallback of native mode
            call = parse_text_call(reply.content or "")
            return [(None, call.name, dict(call.arguments))]
        except FormatError as exc:
            error = exc
        if self.cfg.mode == "tool_calls":
            error = FormatError(
                "Your reply had no tool call. Call exactly one of the tools "
                f"({', '.join(self.registry.tools)}); when you are done, "
                f"{self.toolset.finish_hint}."
            )
        return [(None, "", error)]

    def _observe(self, call_id: str | None, output: str) -> None:
        text = clip_middle(output, self.cfg.observation_limit, OBSERVATION_CUT)
        lefts = [self.step_limit - self.stats.steps] if self.step_limit else []
        if self.task.max_steps:  # green's command limit, minus those kept for the answer
            reserved = self.toolset.reserved_commands
            lefts.append(self.task.max_steps - reserved - len(self.tools.history))
        if lefts:
            left = max(0, min(lefts))
            if left <= self.cfg.steps_left_warning:
                text += (
                    f"\n[{left} step(s) left: {self.toolset.finish_hint} now unless you "
                    "are sure you need another step.]"
                )
        if call_id is not None:
            self._add({"role": "tool", "tool_call_id": call_id, "content": text})
        else:
            self._add({"role": "user", "content": f"Observation: {text}"})

    def _maybe_compact(self) -> None:
        # the larger of: characters / 4, and the last API usage plus what was added since
        estimate = self.context_tokens
        if self.usage_anchor and self.usage_anchor[0] <= len(self.messages):
            covered, tokens = self.usage_anchor
            estimate = max(estimate, tokens + estimate_tokens(self.messages[covered:]))
        if not self.compactor.needs_compaction(estimate):
            return
        before = len(self.messages)
        notes = self.toolset.compaction_notes(self.tools)
        self.messages = self.compactor.compact(self.messages, 2, self.tools.history, notes)
        self.usage_anchor = None
        self.context_tokens = estimate_tokens(self.messages)
        self.traj.event(
            "compaction",
            estimate_before=estimate,
            messages_before=before,
            messages_after=len(self.messages),
            estimate_after=self.context_tokens,
            summary=self.messages[2]["content"] if len(self.messages) > 2 else "",
        )

    # ---- helpers -----------------------------------------------------------------------------

    def _add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.context_tokens += estimate_tokens([message])
        self.traj.event("message", step=self.stats.steps, **message)

    def _on_command(self, record: CommandRecord, result: CommandResult) -> None:
        self.stats.commands += 1
        self.traj.event(
            "command", **record.model_dump(), output=result.output, bytes_cut=result.bytes_cut
        )

    def _stats(self) -> RunStats:
        return self.stats.model_copy()

    def _deadline(self) -> float:
        ends = [self.start + self.cfg.wall_time_limit_s] if self.cfg.wall_time_limit_s else []
        if self.task.deadline is not None:
            left = (self.task.deadline - datetime.now(UTC)).total_seconds()
            ends.append(self.start + left - self.cfg.deadline_margin_s)
        return min(ends) if ends else float("inf")

    def _command_timeout(self) -> float | None:
        timeout = self.cfg.command_timeout_s or self.task.command_timeout_s
        remaining = self.deadline - time.monotonic()
        if remaining < (timeout or 600):
            timeout = max(1.0, remaining)
        return timeout


def _native_call(call: ToolCall) -> Call:
    try:
        args = json.loads(call.arguments or "{}")
    except ValueError as exc:
        error = f"Arguments of {call.name} are not valid JSON ({exc}): {call.arguments[:200]!r}"
        return call.id, call.name, FormatError(error)
    if not isinstance(args, dict):
        error = f"Arguments of {call.name} must be a JSON object, got {call.arguments[:200]!r}."
        return call.id, call.name, FormatError(error)
    return call.id, call.name, args


def _serialize(llm: LLM) -> dict[str, Any]:
    fn = getattr(llm, "serialize", None)
    return fn() if callable(fn) else {"class": type(llm).__name__, "name": getattr(llm, "name", "")}
