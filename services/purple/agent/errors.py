"""Control flow of a run, mini-swe-agent style: a small family of exceptions instead of flags.

Non-terminating ones become an observation and the loop goes on; terminating ones end the run
and decide its status.
"""

from __future__ import annotations

from services.shared.loc import LocJson


class AgentSignal(Exception):
    """Base of the family."""


class NonTerminating(AgentSignal):
    """Shown to the model as an observation; the run continues."""


class Terminating(AgentSignal):
    """Ends the run."""


class FormatError(NonTerminating):
    """The model's reply holds no usable tool call (garbage, unknown tool, bad arguments)."""


class Submitted(Terminating):
    """Green accepted the submission."""

    def __init__(self, submission: LocJson) -> None:
        super().__init__("submission accepted")
        self.submission = submission


class LimitsExceeded(Terminating):
    """A step, cost, wall-time or command limit was reached."""


class TooManyFormatErrors(Terminating):
    """Too many format errors in a row: the model cannot follow the protocol."""
