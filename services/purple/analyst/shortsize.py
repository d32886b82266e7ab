"""Put first the size helper that rounds down what the overflowing access rounds up.

A heap overflow that starts exactly at the buffer's end (ASan's ``0 bytes after N-byte
region``), whose buffer was sized by a project helper on no stack (:mod:`.helpers`), is the
size's fault rather than the index's only when there is evidence of it. The evidence used here
is a rounding mismatch (:mod:`.rounding`): the helper divides a quantity rounding down
(``width / 8``) while the access's length or index is computed from the same quantity rounding
up (``(width + 7) / 8``), in the crash statement, in the bound of the loop around it, on the
line that set the followed value, or in a project function called there. One command reads those functions' bodies. Without such
evidence nothing moves; with it the helper leads and the crash site follows it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from services.purple.analyst.caccess import assignments, memory_function
from services.purple.analyst.cfunc import parse_numbered
from services.purple.analyst.clex import clean
from services.purple.analyst.dataflow import Trail
from services.purple.analyst.helpers import HELPER_ROLE
from services.purple.analyst.resolve import MARK, MAX_GUARD, Resolved
from services.purple.analyst.rounding import at_buffer_end, bodies_command, describe, mismatch
from services.purple.analyst.wrappers import calls_in
from services.purple.signals import Submitted, TaskEnded
from services.purple.tools.rca import RcaTools
from services.shared.logging import get_logger
from services.shared.sanitizer import SanitizerReport
from services.shared.sanitizer.frame_roles import RUNTIME_FUNCTIONS

log = get_logger(__name__)
MAX_ACCESS_CALLEES = 3


def access_text(trail: Trail, reach: int = MAX_GUARD) -> str:
    """The access's side: the crash statement, the loop bounds and checks above it that read
    the accessed index/length, and the lines that last set the followed value in the frame
    where the trail stopped."""
    if not trail.frames:
        return ""
    crash = trail.frames[0]
    texts = [crash.statement]
    if trail.steps and (names := [n for n in trail.steps[0].values if n]):
        read = re.compile(rf"(?<![\w.>])(?:{'|'.join(map(re.escape, names))})\b")
        texts += [t for n, t in crash.checks if crash.line - n <= reach and read.search(clean(t))]
    if trail.steps:
        last = trail.steps[-1]
        if last.frame < len(trail.frames):
            fr = trail.frames[last.frame]
            for name in last.values:
                texts += assignments(fr.body_before, name)[-1:]
    return "\n".join(texts)


def access_callees(text: str, exclude: set[str]) -> list[str]:
    """Project functions called on the access's side (not the runtime, memory functions,
    macros or the size helpers themselves)."""
    names = [
        c
        for c in calls_in(text)
        if c not in RUNTIME_FUNCTIONS
        and c not in exclude
        and not memory_function(c)
        and not c.isupper()
    ]
    return list(dict.fromkeys(names))[:MAX_ACCESS_CALLEES]


def parse_bodies(output: str, names: list[str]) -> dict[str, str]:
    out = {}
    for block in output.split(MARK)[1:]:
        head, _, body = block.partition("\n")
        if head.strip().isdigit() and int(head.strip()) < len(names):
            lines = parse_numbered(body)
            out[names[int(head.strip())]] = "\n".join(lines[n] for n in sorted(lines))
    return out


async def promote_short_size(
    tools: RcaTools,
    report: SanitizerReport,
    resolved: list[Resolved],
    trail: Trail | None,
    folders: list[str],
) -> list[Resolved]:
    """The helper with a rounding mismatch first (one command), or ``resolved`` unchanged."""
    helpers = [r for r in resolved if r.candidate.role.startswith(HELPER_ROLE)]
    if not helpers or trail is None or not at_buffer_end(report.region):
        return resolved
    try:
        own = {r.candidate.function or "" for r in helpers}
        access = access_text(trail)
        extra = access_callees(access, own | {f.function for f in trail.frames})
        names = [*own, *extra]
        src = tools.paths.source_dir.rstrip("/")
        roots = " ".join(shlex.quote(f"{src}/{d}") for d in folders) or shlex.quote(src)
        bodies = parse_bodies((await tools.execute(bodies_command(names, roots))).output, names)
    except (TaskEnded, Submitted):
        raise
    except Exception:  # a lexical heuristic must never cost the submission
        log.exception("rounding check failed; ranking unchanged")
        return resolved
    access_side = "\n".join([access, *(bodies.get(n, "") for n in extra)])
    for r in helpers:
        found = mismatch(bodies.get(r.candidate.function or "", ""), access_side)
        if found is None:
            continue
        role = (
            f"{HELPER_ROLE} ({r.candidate.function}, called at its allocation): {describe(*found)}"
        )
        lead = replace(r, candidate=replace(r.candidate, role=role))
        return [lead, *(x for x in resolved if x is not r)]
    return resolved
