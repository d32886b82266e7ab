"""A run's commands, recorded once: one :class:`CommandRecord` per command feeds the history,
the trajectory and purple's store through one call, :meth:`CommandLog.record`.

Words: a *command* is one shell command run through green (a :class:`CommandResult` comes
back); a *turn* (``RunStats.steps``) is one LLM call of the ReAct loop, which may run zero or
more commands. The tools build the record (they know the turn and the tool); the policy attaches
its trajectory; purple's A2A executor attaches the store's writer.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from services.purple.trajectory import Trajectory
from services.purple.usage import RunStats
from services.shared.commands import CommandResult


class CommandRecord(BaseModel):
    """One executed command, as kept in the command history (never compacted away)."""

    step: int
    """The turn (LLM step) that ran it; 0 for a policy without turns (the analyst)."""
    command: str
    tool: str | None = None
    """The tool call that ran the command, when it was not run_bash_cmd (short form)."""
    exit_code: int
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0
    output_chars: int = 0


StoreCommand = Callable[[CommandRecord], None]
"""Keeps a record in purple's store (must not block: the executor's writer queues it)."""


class CommandLog:
    """Every command of one run, in the order they ran."""

    def __init__(self, usage: RunStats | None = None, store: StoreCommand | None = None) -> None:
        self.history: list[CommandRecord] = []
        self.usage = usage
        """The run's usage: its ``commands`` counter follows the history."""
        self.store = store
        self.trajectory: Trajectory | None = None
        """Set by the policy once it has opened its trajectory."""

    def record(self, record: CommandRecord, result: CommandResult) -> None:
        """The one place a command is recorded: history, usage, trajectory (with its output),
        store (without it: green keeps the output)."""
        self.history.append(record)
        if self.usage is not None:
            self.usage.commands += 1
        if self.trajectory is not None:
            self.trajectory.event(
                "command", **record.model_dump(), output=result.output, bytes_cut=result.bytes_cut
            )
        if self.store is not None:
            self.store(record)

    def __len__(self) -> int:
        return len(self.history)
