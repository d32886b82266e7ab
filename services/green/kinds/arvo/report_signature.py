"""A crash report's signature: the report with what differs between two runs of the same build
blanked out, so that two machines' copies of one task compare equal.

ARVO's ``error.txt`` is a real sanitizer report: the addresses (ASLR, the heap), the process id
(``==17==``), libFuzzer's random seed and the binary's build id change from one run, or one build
of the same recipe, to the next; the frames, files, lines, bug class and sizes do not. A task's
provenance records the sha256 of this signature beside the file's own
(:func:`services.green.tasks.provenance.task_provenance`), and runs are compared on it
(:mod:`services.shared.comparable`): a report that names another frame, line or crash still
differs.
"""

from __future__ import annotations

import re

_VARYING: tuple[tuple[re.Pattern[bytes], bytes], ...] = (
    (re.compile(rb"0x[0-9a-fA-F]+"), b"0x?"),  # addresses, pcs, shadow memory rows
    (re.compile(rb"==\d+=="), b"==?=="),  # the process id
    (re.compile(rb"(?m)^INFO: Seed: \d+"), b"INFO: Seed: ?"),  # libFuzzer's random seed
    (re.compile(rb"BuildId: [0-9a-fA-F]+"), b"BuildId: ?"),
    (re.compile(rb"(?m)^(Executed .* in )\d+( ms)$"), rb"\1?\2"),  # a run's duration
)


def report_signature(report: bytes) -> bytes:
    """``report`` with its run-to-run details blanked (line endings kept as they are)."""
    for pattern, blank in _VARYING:
        report = pattern.sub(blank, report)
    return report
