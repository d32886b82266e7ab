"""Source reads for lifetime bugs (use-after-free, double free): one command, two answers.

1. The bodies of the free and allocation stacks' frames, to recognise the project's wrappers
   (:mod:`.wrappers`), so that the frame above them - where the decision to free or allocate
   was made - is ranked (:func:`.ranking.rank`).
2. The crash frame's code, to find where the dangling pointer it dereferences was taken: the
   last assignment of that local before the crash line (``target = tar_list_find(...)``,
   kept across a call that freed or moved what it points to). The crash site's span then
   opens there.
"""

from __future__ import annotations

import re
import shlex

from services.purple.analyst.caccess import access_sites, assignments, select_sites
from services.purple.analyst.cfunc import parse_numbered
from services.purple.analyst.clex import clean
from services.purple.analyst.frameread import awk_frame, frame_code
from services.purple.analyst.ranking import frame_key
from services.purple.analyst.resolve import MARK, Resolved
from services.purple.analyst.wrappers import awk_body, is_wrapper
from services.shared.sanitizer import Frame, SanitizerReport
from services.shared.sanitizer.frame_roles import is_harness_boundary

MAX_FRAMES = 8
MAX_BODY = 60


def body_reads(
    report: SanitizerReport, resolved: list[Resolved]
) -> list[tuple[str, str, Resolved]]:
    """``(kind, function, resolved)`` for the free/alloc stacks' frames worth reading."""
    stacks = {"free": report.stack("freed"), "alloc": report.stack("allocated")}
    by_key = {r.candidate.key: r for r in resolved}
    reads = []
    for kind, stack in stacks.items():
        for f in (stack.frames if stack else [])[:MAX_FRAMES]:
            if is_harness_boundary(f):
                break
            r = by_key.get(frame_key(f))
            if r is not None and r.fn.start and r.fn.end and r.fn.end - r.fn.start < MAX_BODY:
                reads.append((kind, f.function_name or "", r))
    return reads


def lifetime_command(reads: list[tuple[str, str, Resolved]], crash: Resolved | None) -> str:
    parts = [
        f"echo '{MARK} {i}'; " + awk_body(shlex.quote(r.path), r.fn.body_start or 1, r.fn.end or 1)
        for i, (_, _, r) in enumerate(reads)
    ]
    if crash is not None and crash.fn.start and crash.candidate.line:
        parts.append(
            f"echo '{MARK} crash'; "
            + awk_frame(shlex.quote(crash.path), crash.fn.start, crash.candidate.line, crash.fn.end)
        )
    return "( " + "\n".join(parts) + " )"


def parse_lifetime(output: str) -> tuple[dict[int, str], dict[int, str]]:
    """(bodies by read index, the crash frame's numbered lines)."""
    bodies: dict[int, str] = {}
    crash: dict[int, str] = {}
    for block in output.split(MARK)[1:]:
        head, _, body = block.partition("\n")
        if head.strip().isdigit():
            bodies[int(head.strip())] = "\n".join(parse_numbered(body).values())
        elif head.strip() == "crash":
            crash = parse_numbered(body)
    return bodies, crash


def find_wrappers(reads: list[tuple[str, str, Resolved]], bodies: dict[int, str]) -> set[str]:
    """The functions read that are wrappers, bottom of each stack first (a wrapper may call
    another one of its kind: a free wrapper never makes an allocation wrapper)."""
    known: dict[str, set[str]] = {"free": set(), "alloc": set()}
    for i in sorted(bodies):
        kind, name, _ = reads[i]
        if name and is_wrapper(bodies[i], kind, known[kind]):
            known[kind].add(name)
    return known["free"] | known["alloc"]


def pointer_taken_at(frame: Frame, crash: Resolved, lines: dict[int, str]) -> int | None:
    """The line where the local pointer dereferenced on the crash line was last assigned, in
    the crash frame before that line; None when it is a parameter or not found."""
    if not lines or not frame.line or not crash.fn.start:
        return None
    code = frame_code(
        frame.function_name or "", crash.rel_path, frame.line, frame.column, crash.fn.start, lines
    )
    first = code.statement.split("\n", 1)[0]
    sites = select_sites(access_sites(code.statement), clean(first), frame.column)
    names = {v for s in sites for v in s.value.vars} - set(code.params or [])
    if not names or code.params is None:
        return None
    for n in sorted((k for k in lines if k < frame.line), reverse=True):
        if any(assignments(lines[n], v) or _declared(lines[n], v) for v in names):
            return n if not re.search(r"\bNULL\b|=\s*0\s*;", lines[n]) else None
    return None


def _declared(text: str, name: str) -> bool:
    """``struct item *it = ...;``: a pointer declared with its value."""
    return bool(re.match(rf"^\s*[A-Za-z_][\w\s]*\*+\s*{re.escape(name)}\s*=(?!=)", clean(text)))
