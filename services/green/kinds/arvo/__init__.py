"""The ARVO task kinds, on the same bugs: locate the root cause of a fuzzer crash (``arvo``,
answered with loc.json), reproduce it (``arvo-poc``, an input) and fix it (``arvo-fix``, a
patch)."""

from services.green.kinds.arvo.fix.kind import ArvoFixKind
from services.green.kinds.arvo.kind import ArvoKind, ArvoPlan
from services.green.kinds.arvo.poc.kind import ArvoPocKind

__all__ = ["ArvoFixKind", "ArvoKind", "ArvoPlan", "ArvoPocKind"]
