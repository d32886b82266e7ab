"""The result of one shell command run in a task container."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CommandResult(BaseModel):
    """What a sandbox returns for one command (and what green sends back to purple)."""

    exit_code: int
    """Exit status of the command; -1 when it did not finish (timeout, lost container)."""
    output: str
    """stdout and stderr interleaved, decoded as UTF-8 with replacement, capped (head + tail)."""
    truncated: bool = False
    """True when bytes were cut from the middle of the output."""
    bytes_cut: int = 0
    """How many bytes of output were dropped by the cap."""
    timed_out: bool = False
    """True when the command hit its timeout and its processes were killed."""
    duration_s: float = Field(0.0, ge=0)
    """Wall time from sending the command to its end, in seconds."""
