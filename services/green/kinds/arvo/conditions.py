"""What a locate task gives the agent (FLBench's four conditions), named in its id.

``arvo:<arvo id>`` is the locate kind's own condition: the vulnerable source and the sanitizer
report. ``arvo:<arvo id>-<condition>`` names one of FLBench's four; the condition is part of
the task's reference, so it travels through every interface (REST, A2A text, assessments, the
CLI) as the task does, and runs under different conditions are different tasks in every report
and comparison (the reproduce kind names its help levels the same way).

- ``main``: the source, the PoC file, the report, and ``run_poc``;
- ``static-only``: the source and the PoC file;
- ``no-poc-file``: the source, the report (the crashing input's bytes withheld), and
  ``run_poc``;
- ``no-source``: everything but the source (a memorization check).

Under the four, the agent never runs the reproducer itself (its container has no fuzz target
and no ``arvo``): where the condition offers it, ``run_poc`` asks green to run the vulnerable
target on the PoC in a judging container of green's own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.green.kinds.arvo.assets import parse_arvo_id


@dataclass(frozen=True)
class Condition:
    """What a locate task grants the agent."""

    name: str | None
    """``main``, ``static-only``, ``no-poc-file``, ``no-source``; None: the kind's own."""
    source: bool
    """The vulnerable source tree (``/workspace/src-vul/<project>``, and the image's ``/src``)."""
    report: bool
    """The sanitizer report (``/workspace/error.txt``)."""
    poc_file: bool
    """The crashing input, at :data:`POC_FILE`."""
    run_poc: bool
    """The ``run_poc`` verb: green runs the vulnerable target on the PoC and answers its output."""

    @property
    def flbench(self) -> bool:
        """One of FLBench's four: the agent never runs the reproducer itself."""
        return self.name is not None

    def grants(self) -> list[str]:
        """What it grants, in words (the task message, the docs)."""
        words = [
            ("the vulnerable source tree", self.source),
            ("the sanitizer report", self.report),
            ("the crashing input (the PoC file)", self.poc_file),
            ("running the PoC on the vulnerable build (run_poc)", self.run_poc),
        ]
        return [w for w, granted in words if granted]


PLAIN = Condition(None, source=True, report=True, poc_file=False, run_poc=False)
CONDITIONS: dict[str, Condition] = {
    c.name: c  # type: ignore[misc]
    for c in (
        Condition("main", source=True, report=True, poc_file=True, run_poc=True),
        Condition("static-only", source=True, report=False, poc_file=True, run_poc=False),
        Condition("no-poc-file", source=True, report=True, poc_file=False, run_poc=True),
        Condition("no-source", source=False, report=True, poc_file=True, run_poc=True),
    )
}
POC_FILE = "/workspace/poc"
"""Where a condition that grants the PoC file puts it."""

_ID = re.compile(r"^(?P<arvo>[0-9]+)(?:-(?P<condition>[a-z][a-z-]*))?$", re.IGNORECASE)


def parse_locate_id(ref_id: str) -> tuple[str, Condition]:
    """``"10055-main"`` -> (``"10055"``, main); ``"10055"`` -> (``"10055"``, the kind's own).
    ValueError with a sentence for anything else."""
    text = str(ref_id).strip()
    kind, colon, rest = text.partition(":")
    if colon and kind.strip().lower() == "arvo":  # "arvo:10055-main"
        text = rest.strip()
    m = _ID.match(text)
    if not m:
        raise ValueError(
            f"not an ARVO id: {ref_id!r} (digits, optionally with a condition: 10055, "
            f"10055-{', 10055-'.join(CONDITIONS)})"
        )
    arvo = parse_arvo_id(m.group("arvo"))
    name = m.group("condition")
    if name is None:
        return arvo, PLAIN
    condition = CONDITIONS.get(name.lower())
    if condition is None:
        raise ValueError(
            f"no condition {name!r} in {ref_id!r} (conditions: {', '.join(CONDITIONS)})"
        )
    return arvo, condition


def canonical_locate_id(ref_id: str) -> str:
    """``010055-Main`` -> ``10055-main``; ``010055`` -> ``10055``."""
    arvo, condition = parse_locate_id(ref_id)
    return arvo if condition.name is None else f"{arvo}-{condition.name}"
