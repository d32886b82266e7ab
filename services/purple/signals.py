"""How a run's control flow is signalled: a small family of exceptions instead of flags.

Non-terminating ones become an observation and the run goes on; terminating ones end the run
and decide its status (:func:`ending`). Policies, tools and environments raise them; nothing
here imports the rest of purple.
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
    """Green accepted the submission: the run ends with status ``submitted``. ``submission`` is
    the answer the agent wrote when it is a loc.json (root-cause analysis); None when green
    takes the answer from the container itself (a SWE-bench patch)."""

    def __init__(
        self, reason: str = "submission accepted", *, submission: LocJson | None = None
    ) -> None:
        super().__init__(reason)
        self.submission = submission


class LimitsExceeded(Terminating):
    """A step, cost, wall-time or command limit was reached."""


class TooManyFormatErrors(Terminating):
    """Too many format errors in a row: the model cannot follow the protocol."""


class TaskEnded(Terminating):
    """Raised by an environment when green no longer serves the task (finished, cancelled,
    limit reached, deadline passed). Policies stop with status ``limits``."""


def ending(exc: BaseException) -> tuple[str, str, LocJson | None]:
    """How a run that stopped with ``exc`` ends: (status, reason, accepted submission)."""
    if isinstance(exc, Submitted):
        return "submitted", str(exc), exc.submission
    if isinstance(exc, LimitsExceeded | TaskEnded):
        return "limits", str(exc) or type(exc).__name__, None
    if isinstance(exc, TooManyFormatErrors):
        return "format_errors", str(exc), None
    return "error", f"{type(exc).__name__}: {exc}", None
