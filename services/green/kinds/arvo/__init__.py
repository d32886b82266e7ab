"""The ARVO task kind: root-cause analysis of a fuzzer crash, answered with loc.json."""

from services.green.kinds.arvo.kind import ArvoKind, ArvoPlan

__all__ = ["ArvoKind", "ArvoPlan"]
