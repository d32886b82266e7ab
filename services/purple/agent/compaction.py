"""Keep the conversation within a token budget, deterministically (no LLM needed).

When the estimated size reaches the budget, everything between the head (system prompt + task)
and the last few turns is replaced by one summary message. The summary always lists every
command executed so far with its exit code (the command history is never dropped; the run keeps
it separately too), plus short notes on the removed turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from services.purple.agent.parser import BEGIN
from services.purple.protocols import CommandRecord

Message = dict[str, Any]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_TOKENS = 4
SUMMARY_HEADER = "[Context summary:"


def estimate_tokens(messages: list[Message]) -> int:
    """A tokenizer-free estimate: characters / 4, plus a few tokens per message."""
    chars = 0
    for m in messages:
        chars += len(m.get("content") or "")
        if m.get("tool_calls"):
            chars += len(json.dumps(m["tool_calls"]))
    return chars // CHARS_PER_TOKEN + MESSAGE_OVERHEAD_TOKENS * len(messages)


def split_turns(messages: list[Message]) -> list[list[Message]]:
    """Group messages into turns, each starting at an assistant message (tool replies and
    observations belong to the turn of the call they answer)."""
    turns: list[list[Message]] = []
    for m in messages:
        if m.get("role") == "assistant" or not turns:
            turns.append([m])
        else:
            turns[-1].append(m)
    return turns


def _one_line(text: str, limit: int) -> str:
    flat = " ⏎ ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def turn_note(turn: list[Message], limit: int = 240) -> str | None:
    """A one-line note on a turn: the model's reasoning (the calls are in the command list)."""
    first = turn[0]
    if first.get("role") != "assistant":
        return None
    thought = (first.get("content") or "").split(BEGIN)[0]
    return _one_line(thought, limit) or None


@dataclass
class Compactor:
    budget_tokens: int
    keep_last_turns: int = 6
    command_width: int = 300
    """Each command is shown on one line, cut to this many characters (the full text is in
    the trajectory and the run's command history)."""
    max_notes: int = 40
    notes: list[str] = field(default_factory=list)
    removed_turns: int = 0
    compactions: int = 0

    def needs_compaction(self, estimate: int) -> bool:
        return estimate >= self.budget_tokens

    def compact(
        self,
        messages: list[Message],
        head_len: int,
        history: list[CommandRecord],
        extra_notes: list[str] | None = None,
    ) -> list[Message]:
        """Return ``head + [summary] + last turns``; the old summary (if any) must be part of
        ``messages[head_len:]``'s first turn or excluded via ``head_len``."""
        head, turns = messages[:head_len], split_turns(messages[head_len:])
        target = int(self.budget_tokens * 0.6)
        for keep in range(min(self.keep_last_turns, len(turns) - 1), 0, -1):
            kept, dropped = turns[-keep:], turns[:-keep]
            summary = self._summary(dropped, history, extra_notes, commit=False)
            candidate = [*head, summary, *(m for t in kept for m in t)]
            if estimate_tokens(candidate) <= target or keep == 1:
                break
        else:  # zero or one turn: nothing to drop
            return messages
        summary = self._summary(dropped, history, extra_notes, commit=True)
        self.compactions += 1
        return [*head, summary, *(m for t in kept for m in t)]

    def _summary(
        self,
        dropped: list[list[Message]],
        history: list[CommandRecord],
        extra_notes: list[str] | None,
        *,
        commit: bool,
    ) -> Message:
        notes = [*self.notes]
        removed = self.removed_turns
        for turn in dropped:
            if turn[0].get("role") == "user" and str(turn[0].get("content", "")).startswith(
                SUMMARY_HEADER
            ):
                continue  # an earlier summary: its notes are already in self.notes
            removed += 1
            if note := turn_note(turn):
                notes.append(note)
        notes = notes[-self.max_notes :]
        if commit:
            self.notes, self.removed_turns = notes, removed
        lines = [
            f"{SUMMARY_HEADER} {removed} earlier turn(s) were removed to stay within the "
            "context budget.]",
            f"Commands executed so far ({len(history)}, all of them, in order):",
        ]
        lines += [
            f"  {i}. [exit {r.exit_code}{', timed out' if r.timed_out else ''}] "
            f"{_one_line(r.tool or r.command, self.command_width)}"
            for i, r in enumerate(history, 1)
        ] or ["  (none)"]
        if notes:
            lines.append("Your reasoning in the removed turns (oldest first):")
            lines += [f"  - {n}" for n in notes]
        for n in extra_notes or []:
            lines.append(n)
        lines.append("Continue the analysis from here.")
        return {"role": "user", "content": "\n".join(lines)}
