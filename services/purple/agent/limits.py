"""The limits of one agent run: its own (steps, cost, wall time) and green's (command budget,
deadline), checked before each step and told to the model as they near."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from services.purple.agent.config import AgentConfig
from services.purple.protocols import RunStats, TaskContext, Tools
from services.purple.signals import LimitsExceeded


class Limits:
    def __init__(self, cfg: AgentConfig, task: TaskContext, reserved_commands: int) -> None:
        self.cfg = cfg
        self.step_limit = cfg.step_limit or None
        """Most LLM turns (None: no limit)."""
        self.command_limit = task.max_commands or None
        """Green's command limit (None: no limit)."""
        self.reserved_commands = reserved_commands
        """Commands of green's budget kept for the final answer."""
        self.command_timeout_s = cfg.command_timeout_s or task.command_timeout_s
        start = time.monotonic()
        ends = [start + cfg.wall_time_limit_s] if cfg.wall_time_limit_s else []
        if task.deadline is not None:
            left = (task.deadline - datetime.now(UTC)).total_seconds()
            ends.append(start + left - cfg.deadline_margin_s)
        self.deadline = min(ends) if ends else float("inf")
        """The run's end on the monotonic clock."""

    def check(self, stats: RunStats, tools: Tools) -> None:
        """Raise :class:`LimitsExceeded` when no further step may start."""
        if self.step_limit is not None and stats.steps >= self.step_limit:
            raise LimitsExceeded(f"step limit ({self.step_limit}) reached")
        if self.command_limit and (
            len(tools.history) >= self.command_limit or tools.budget_refusals >= 2
        ):
            raise LimitsExceeded(f"green's command limit ({self.command_limit}) reached")
        if self.cfg.cost_limit and stats.cost >= self.cfg.cost_limit:
            raise LimitsExceeded(f"cost limit (${self.cfg.cost_limit:.2f}) reached")
        if self.remaining_s() <= 0:
            raise LimitsExceeded("wall-time limit reached")

    def remaining_s(self) -> float:
        return self.deadline - time.monotonic()

    def command_timeout(self) -> float | None:
        """The timeout of the next command: the configured one, lowered as the deadline nears."""
        timeout, remaining = self.command_timeout_s, self.remaining_s()
        if remaining < (timeout or 600):
            timeout = max(1.0, remaining)
        return timeout

    def reminder(self, stats: RunStats, tools: Tools, finish_hint: str) -> str:
        """A note for the observation when few steps or commands are left, else ""."""
        lefts = [self.step_limit - stats.steps] if self.step_limit else []
        if self.command_limit:  # minus the commands kept for the answer
            lefts.append(self.command_limit - self.reserved_commands - len(tools.history))
        if not lefts or (left := max(0, min(lefts))) > self.cfg.steps_left_warning:
            return ""
        return (
            f"\n[{left} step(s) left: {finish_hint} now unless you are sure you need another step.]"
        )
