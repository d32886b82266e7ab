"""The seam between purple's policies and the world: where commands run, and what a run returns.

A policy (the ReAct agent, the stack-trace analyst) only sees a :class:`TaskEnvironment`; the
A2A implementation sends ``execute``/``submit`` to green, tests use a local shell. Swapping one
for the other touches nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from services.shared.commands import CommandResult
from services.shared.loc import LocJson
from services.shared.protocol import SubmitResult, TaskPaths


class RunStats(BaseModel):
    """Usage so far; sent with the submission (green's ``submit`` data part carries it)."""

    steps: int = 0
    """Policy steps: LLM calls for the agent, commands for the analyst."""
    commands: int = 0
    """Commands sent through :meth:`TaskEnvironment.execute`."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0


class TaskEnded(RuntimeError):
    """Raised by an environment when green no longer serves the task (finished, cancelled,
    limit reached, deadline passed). Policies stop with status ``limits``."""


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


@dataclass
class TaskContext:
    """Everything a policy needs to work on one task."""

    task_id: str
    description: str
    """The task text green sent (becomes the agent's first user message)."""
    env: TaskEnvironment
    paths: TaskPaths
    max_steps: int | None = None
    """Green's step limit for this task (commands); the agent never plans beyond it."""
    deadline: datetime | None = None
    """Absolute (timezone-aware) time after which green ends the task."""
    command_timeout_s: float | None = None
    """Green's per-command timeout; None leaves it to green."""


class CommandRecord(BaseModel):
    """One executed command, as kept in the command history (never compacted away)."""

    step: int
    command: str
    tool: str | None = None
    """The tool call that ran the command, when it was not run_bash_cmd (short form)."""
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    output_chars: int = 0


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
