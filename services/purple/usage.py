"""A run's usage so far (:class:`RunStats`): its turns, commands, tokens and cost.

At the bottom of purple beside :mod:`services.purple.commands`, which counts the commands into
it; the seams (:mod:`services.purple.protocols`) send it with every command and the submission.
"""

from __future__ import annotations

from pydantic import BaseModel


class RunStats(BaseModel):
    """Usage so far; sent with every command and the submission (green records it)."""

    steps: int = 0
    """Turns: LLM calls (the offline analyst takes none). Sent to green as ``Submit.steps``."""
    commands: int = 0
    """Commands run through green (counted by :class:`~services.purple.commands.CommandLog`)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
