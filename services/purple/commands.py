"""A run's commands, recorded once: one :class:`CommandRecord` per command feeds the history,
the usage and the trajectory through one call, :meth:`CommandLog.record`.

Words: a *command* is one shell command run through green (a :class:`CommandResult` comes
back); a *turn* (``RunStats.steps``) is one LLM call of the ReAct loop, which may run zero or
more commands. The tools build the record (they know the turn and the tool); the policy attaches
its trajectory, and whoever made the log hears of it (purple's A2A executor lists the
trajectory's file in the task's record, :mod:`services.purple.task_index`).
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


TrajectoryOpened = Callable[[Trajectory], None]
"""Told of each trajectory a policy attaches to the log."""


class CommandLog:
    """Every command of one run, in the order they ran."""

    def __init__(
        self, usage: RunStats | None = None, on_trajectory: TrajectoryOpened | None = None
    ) -> None:
        self.history: list[CommandRecord] = []
        self.usage = usage
        """The run's usage: its ``commands`` counter follows the history."""
        self.on_trajectory = on_trajectory
        self._trajectory: Trajectory | None = None

    @property
    def trajectory(self) -> Trajectory | None:
        """Set by the policy once it has opened its trajectory (``on_trajectory`` hears of it)."""
        return self._trajectory

    @trajectory.setter
    def trajectory(self, traj: Trajectory | None) -> None:
        self._trajectory = traj
        if traj is not None and self.on_trajectory is not None:
            self.on_trajectory(traj)

    def record(self, record: CommandRecord, result: CommandResult) -> None:
        """The one place a command is recorded: history, usage, trajectory (with its output)."""
        self.history.append(record)
        if self.usage is not None:
            self.usage.commands += 1
        if self._trajectory is not None:
            self._trajectory.event(
                "command", **record.model_dump(), output=result.output, bytes_cut=result.bytes_cut
            )

    def __len__(self) -> int:
        return len(self.history)
