"""The run's conversation: its messages, their estimated size, and compaction when it
outgrows the budget (:mod:`.compaction`). Every message is written to the trajectory."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from services.purple.agent.compaction import Compactor, estimate_tokens
from services.purple.agent.config import AgentConfig
from services.purple.llm.base import LLMReply
from services.purple.protocols import CommandRecord
from services.purple.trajectory import Trajectory

HEAD = 2
"""Messages never compacted: the system prompt and the task."""


class Conversation:
    def __init__(self, cfg: AgentConfig, traj: Trajectory) -> None:
        self.traj = traj
        self.messages: list[dict[str, Any]] = []
        self.compactor = Compactor(cfg.context_budget_tokens, cfg.keep_last_turns)
        self.tokens = 0
        """Running :func:`estimate_tokens` of the messages."""
        self.usage_anchor: tuple[int, int] | None = None
        """(messages covered, their tokens) from the model's last reported usage."""

    def add(self, message: dict[str, Any], step: int) -> None:
        self.messages.append(message)
        self.tokens += estimate_tokens([message])
        self.traj.event("message", step=step, **message)

    def note_usage(self, reply: LLMReply) -> None:
        """Anchor the size estimate on the usage the API reported (the reply included)."""
        if reply.tokens_in:
            self.usage_anchor = (len(self.messages) + 1, reply.tokens_in + reply.tokens_out)

    def estimate(self) -> int:
        """The larger of: characters / 4, and the last API usage plus what was added since."""
        estimate = self.tokens
        if self.usage_anchor and self.usage_anchor[0] <= len(self.messages):
            covered, tokens = self.usage_anchor
            estimate = max(estimate, tokens + estimate_tokens(self.messages[covered:]))
        return estimate

    def compact_if_needed(
        self, history: list[CommandRecord], notes: Callable[[], list[str]], force: bool = False
    ) -> bool:
        """Replace old turns by a summary (the command list and ``notes()`` kept) when the
        estimate reaches the budget (or when ``force``d). True when something was removed."""
        estimate = self.estimate()
        if not force and not self.compactor.needs_compaction(estimate):
            return False
        before, old = len(self.messages), self.messages
        self.messages = self.compactor.compact(self.messages, HEAD, history, notes())
        if self.messages is old:
            return False  # nothing left to drop
        self.usage_anchor = None
        self.tokens = estimate_tokens(self.messages)
        self.traj.event(
            "compaction",
            estimate_before=estimate,
            messages_before=before,
            messages_after=len(self.messages),
            estimate_after=self.tokens,
            summary=self.messages[HEAD]["content"] if len(self.messages) > HEAD else "",
        )
        return True
