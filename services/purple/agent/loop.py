"""The ReAct loop: ask the model, run the tool it calls, show it the output, until a signal
(:mod:`services.purple.signals`) ends the run.

One :class:`ReactAgent` serves many tasks (concurrently too); each run keeps its state in its
own :class:`_Run`. The limits (:mod:`.limits`), the conversation and its compaction
(:mod:`.context`), reading calls from a reply (:mod:`.parser`), the config with the prompt
templates (:mod:`.config`) and the run's record (:mod:`.record`) are their own modules.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.purple.agent.config import AgentConfig
from services.purple.agent.context import Conversation
from services.purple.agent.limits import Limits
from services.purple.agent.parser import reply_calls
from services.purple.agent.record import RunRecord
from services.purple.llm.base import LLM, ContextOverflow, LLMReply
from services.purple.protocols import RunResult, TaskContext, Toolset
from services.purple.signals import FormatError, LimitsExceeded, TooManyFormatErrors
from services.purple.tools.toolsets import RcaToolset
from services.shared.text import clip_middle

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
        self.toolset = toolset or RcaToolset()
        """The kind of task: its tools (root-cause analysis by default)."""
        self.config = (config or AgentConfig()).with_templates(self.toolset.name)
        self.trajectory_dir = trajectory_dir

    async def run(self, task: TaskContext) -> RunResult:
        return await _Run(self, task).run()


class _Run:
    def __init__(self, agent: ReactAgent, task: TaskContext) -> None:
        self.cfg, self.llm, self.toolset = agent.config, agent.llm, agent.toolset
        self.record = RunRecord(
            task,
            policy=agent.name,
            config=self.cfg,
            llm=self.llm,
            toolset=self.toolset.name,
            trajectory_dir=agent.trajectory_dir,
        )
        self.stats = self.record.stats
        self.tools = self.toolset.make_tools(
            task.env,
            task.paths,
            commands=task.commands,
            stats=self.stats.model_copy,
            max_commands=task.max_commands,
            offers=task.offers,
        )
        self.registry = self.tools.registry()
        self.schemas = self.registry.schemas() if self.cfg.mode == "tool_calls" else None
        self.limits = Limits(self.cfg, task, self.toolset.reserved_commands)
        self.chat = Conversation(self.cfg, self.record.traj)
        self.format_errors = 0

    async def run(self) -> RunResult:
        system, instance = self.record.start(self.registry.describe(), self.limits.step_limit)
        await self.fit_window()
        self.chat.add({"role": "system", "content": system}, 0)
        self.chat.add({"role": "user", "content": instance}, 0)
        ended = None  # stays None when the run is cancelled
        try:
            while True:
                await self.turn()
        except Exception as exc:  # a run never crashes the service; LLMError lands here too
            ended = exc
        finally:
            result = self.record.finish(ended, self.tools.history, self.chat)
        return result

    async def turn(self) -> None:
        """One turn: ask the model, run the tools it calls, show it what they gave."""
        self.limits.check(self.stats, self.tools)
        self.stats.steps += 1
        self.tools.turn = self.stats.steps
        self.chat.compact_if_needed(
            self.tools.history, lambda: self.toolset.compaction_notes(self.tools)
        )
        reply = await self.query()
        self.chat.add(reply.assistant_message(), self.stats.steps)
        valid = 0
        for call_id, name, args in reply_calls(reply, no_call=self.no_call()):
            try:
                if isinstance(args, FormatError):
                    raise args
                self.tools.command_timeout = self.limits.command_timeout()
                self.tools.tool_call = (name, call_id)
                output = await self.registry.call(name, args)
                valid += 1
            except FormatError as exc:  # ToolCallError is one too
                output = str(exc)
            self.observe(call_id, output)
        self.format_errors = 0 if valid else self.format_errors + 1
        if self.format_errors >= self.cfg.max_consecutive_format_errors:
            raise TooManyFormatErrors(f"{self.format_errors} unusable replies in a row")

    async def fit_window(self, window: int | None = None, source: str = "config") -> None:
        """Make the compaction budget fit the model's context window: the configured one, the
        one the server tells (``context_window()``), or one a refusal named (``window``)."""
        if window is None and (window := self.cfg.context_window) is None:
            ask = getattr(self.llm, "context_window", None)
            window, source = (await ask() if callable(ask) else None), "server"
        budget = self.cfg.budget_for(window)
        self.chat.compactor.budget_tokens = min(self.chat.compactor.budget_tokens, budget)
        if window:
            self.record.traj.event(
                "context_window", window=window, source=source, budget=budget, step=self.stats.steps
            )

    async def query(self) -> LLMReply:
        try:
            async with asyncio.timeout(self.limits.remaining_s()):
                try:
                    reply = await self.llm.query(self.chat.messages, self.schemas)
                except ContextOverflow as exc:  # compact, then one retry
                    await self.fit_window(exc.window, "the server's refusal")
                    notes = lambda: self.toolset.compaction_notes(self.tools)  # noqa: E731
                    if not self.chat.compact_if_needed(self.tools.history, notes, force=True):
                        raise ContextOverflow(f"{exc} (nothing left to compact)") from exc
                    self.record.traj.event("context_retry", step=self.stats.steps, error=str(exc))
                    try:
                        reply = await self.llm.query(self.chat.messages, self.schemas)
                    except ContextOverflow as again:
                        raise ContextOverflow(f"{again} (after compaction and one retry)") from exc
        except TimeoutError:
            raise LimitsExceeded("wall-time limit reached while waiting for the model") from None
        self.chat.note_usage(reply)
        self.record.llm_call(reply)
        return reply

    def observe(self, call_id: str | None, output: str) -> None:
        text = clip_middle(output, self.cfg.observation_limit, OBSERVATION_CUT)
        text += self.limits.reminder(self.stats, self.tools, self.toolset.finish_hint)
        if call_id is not None:
            self.chat.add(
                {"role": "tool", "tool_call_id": call_id, "content": text}, self.stats.steps
            )
        else:
            self.chat.add({"role": "user", "content": f"Observation: {text}"}, self.stats.steps)

    def no_call(self) -> str | None:
        """What a reply without a call is told in native mode (text mode: the format's help)."""
        if self.cfg.mode != "tool_calls":
            return None
        return (
            f"Your reply had no tool call. Call exactly one of the tools "
            f"({', '.join(self.registry.tools)}); when you are done, {self.toolset.finish_hint}."
        )
