"""The ReAct agent: the loop (:mod:`.loop`), its config, control-flow exceptions, the textual
call parser, compaction and the trajectory.

Import the loop from :mod:`services.purple.agent.loop` (kept out of this ``__init__`` so that
tools can import the exceptions without import cycles).
"""

from services.purple.agent.config import AgentConfig
from services.purple.agent.errors import (
    AgentSignal,
    FormatError,
    LimitsExceeded,
    NonTerminating,
    Submitted,
    Terminating,
    TooManyFormatErrors,
)

__all__ = [
    "AgentConfig",
    "AgentSignal",
    "FormatError",
    "LimitsExceeded",
    "NonTerminating",
    "Submitted",
    "Terminating",
    "TooManyFormatErrors",
]
