"""The seams inside purple: where commands run, what a policy is, what a run returns, and what
the ReAct loop needs from a kind of task (a run's commands are recorded by
:mod:`services.purple.commands`).

A policy (the ReAct agent, the stack-trace analyst) only sees a :class:`TaskEnvironment`; the
A2A implementation sends ``execute``/``submit`` to green, tests use a local shell. A
:class:`Toolset` (root-cause analysis, SWE-bench) gives the loop its tools. This module is at
the bottom of purple: it imports only ``services.shared``, :mod:`services.purple.commands`
and :mod:`services.purple.usage`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from services.purple.commands import CommandLog, CommandRecord
from services.purple.usage import RunStats
from services.shared.commands import CommandResult
from services.shared.loc import LocJson
from services.shared.protocol import SubmitResult, TaskPaths


@runtime_checkable
class TaskEnvironment(Protocol):
    """Where a task's commands run: green's container (A2A) or a local shell (tests)."""

    async def execute(self, command: str, timeout: float | None = None) -> CommandResult:
        """Run one shell command (``bash -c`` semantics, cwd = workspace). Never raises for a
        failing command; raises :class:`TaskEnded` when the task is over."""
        ...

    async def submit(self, stats: RunStats | None = None) -> SubmitResult:
        """Tell green that ``loc.json`` is written; green validates it and answers."""
        ...


@runtime_checkable
class RunsPoc(Protocol):
    """An environment that can ask green to run the task's PoC (``run_poc``, where offered)."""

    async def run_poc(self) -> CommandResult: ...


@dataclass
class TaskContext:
    """Everything a policy needs to work on one task."""

    task_id: str
    description: str
    """The task text green sent (becomes the agent's first user message)."""
    env: TaskEnvironment
    paths: TaskPaths
    max_commands: int | None = None
    """Green's command limit for this task (``TaskLimits.max_steps`` on the wire); the agent
    never plans beyond it."""
    deadline: datetime | None = None
    """Absolute (timezone-aware) time after which green ends the task."""
    command_timeout_s: float | None = None
    """Green's per-command timeout; None leaves it to green."""
    usage: RunStats = field(default_factory=RunStats)
    """The run's usage as it accrues: the policy counts into it, the environment reports it
    with each command, and it survives a cancelled run."""
    commands: CommandLog = field(default_factory=CommandLog)
    """Where the run's tools record each command once (history, usage, trajectory)."""
    offers: tuple[str, ...] = ()
    """The requests beyond execute and submit the task serves (``run_poc``)."""

    def __post_init__(self) -> None:
        if self.commands.usage is None:
            self.commands.usage = self.usage


RunStatus = Literal["submitted", "limits", "format_errors", "error"]


class RunResult(BaseModel):
    """What a policy run ends with."""

    task_id: str
    policy: str
    """Which policy ran ("react", "stack-trace-analyst")."""
    status: RunStatus
    reason: str = ""
    """Why the run ended, in a sentence (limit hit, exception text, refusal...)."""
    stats: RunStats = RunStats()
    duration_s: float = 0.0
    submission: LocJson | None = None
    """The accepted loc.json, or None."""
    command_history: list[CommandRecord] = []
    trajectory_path: str | None = None


@runtime_checkable
class Policy(Protocol):
    """Anything that can work on a task: the ReAct agent, the stack-trace analyst."""

    name: str

    async def run(self, task: TaskContext) -> RunResult: ...


@runtime_checkable
class Registry(Protocol):
    """The tools of a run as the loop calls them (:class:`~services.purple.tools.registry.ToolRegistry`)."""

    tools: dict[str, Any]

    def schemas(self) -> list[dict[str, Any]]: ...

    def describe(self) -> str: ...

    async def call(self, name: str, arguments: dict[str, Any]) -> str: ...


@runtime_checkable
class Tools(Protocol):
    """The tools of one run, as the loop drives them."""

    history: list[CommandRecord]
    """Every command run so far (never compacted away)."""
    turn: int
    """Set by the loop before each turn (LLM call); recorded with every command as ``step``."""
    command_timeout: float | None
    """Set by the loop before each call (lowered as the deadline nears)."""
    tool_call: tuple[str, str | None] | None
    """Set by the loop before each call: the tool's name and the model's call id."""
    budget_refusals: int
    """Calls refused because the command budget is used up (two end the run)."""

    def registry(self) -> Registry: ...


@runtime_checkable
class Toolset(Protocol):
    """A kind of task for the ReAct loop: its tools. Its prompts are the agent config's
    templates (``services/purple/agent/prompts/<name>.yaml``)."""

    name: str
    """Also names the built-in prompt templates."""
    reserved_commands: int
    """Commands of the command budget kept for the final answer (RCA: writing loc.json)."""
    finish_hint: str
    """How to end the task, for reminders ("submit your answer with submit_localization")."""

    def make_tools(
        self,
        env: TaskEnvironment,
        paths: TaskPaths,
        *,
        commands: CommandLog | None,
        stats: Callable[[], RunStats] | None,
        max_commands: int | None,
        offers: tuple[str, ...] = (),
    ) -> Tools: ...

    def compaction_notes(self, tools: Tools) -> list[str]:
        """Facts a context summary must keep (e.g. refused submissions)."""
        ...
