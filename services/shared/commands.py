"""The result of one shell command run in a task container: one type from the sandbox to the
agent (the sandbox builds it, green records and sends it, purple reads it back)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class CommandResult(BaseModel):
    """What a sandbox returns for one command, and the data part green sends back to purple as
    the reply to ``execute`` (docs/protocol.md: ``kind`` is ``"result"``)."""

    kind: Literal["result"] = "result"
    """The protocol's tag of this data part (the reply to :class:`~services.shared.protocol.Execute`)."""
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
