"""Ranking the report's frames into candidate locations, best first (no source needed).

The crash site first (for a double free: the first free); then, by bug class, the site that
decided to free the object and the one that allocated it (lifetime bugs: the first frames above
the project's allocation/free wrappers, see :mod:`.wrappers`), the allocation site of the
overflowed buffer, the overflowed stack object or global, MSan's origin; callers of the crash
site fill the remaining places, then the wrappers themselves and the frames further up the
free and allocation stacks.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.shared.sanitizer import Frame, SanitizerReport
from services.shared.sanitizer.frame_roles import (
    harness_frames,
    in_harness_path,
    is_runtime_frame,
    is_system_frame,
    project_frames,
)


@dataclass
class Candidate:
    file: str
    """As written in the report (``/src/<project>/a/b.c``)."""
    line: int | None
    """None for a frame the symbolizer printed without a line (merged or recursive code)."""
    function: str | None
    role: str

    @property
    def key(self) -> tuple[str, int | None, str | None]:
        return (self.file, self.line, self.function)


def frame_key(f: Frame) -> tuple[str, int | None, str | None]:
    return (f.file or "", f.line, f.function_name)


def _cand(frame: Frame, role: str) -> Candidate:
    return Candidate(frame.file or "", frame.line, frame.function_name, role)


def _decision(stack: list[Frame], wrappers: frozenset[str], skip: set) -> Frame | None:
    """The first frame above the wrappers (the one that decided), not in ``skip``."""
    for f in stack:
        if f.function_name in wrappers:
            continue
        if frame_key(f) not in skip:
            return f
    return None


def _first(report: SanitizerReport, crash: list[Frame], what: str) -> list[Candidate]:
    if crash:
        return [_cand(crash[0], f"crash site: {what}")]
    if report.ub_location is not None:
        u = report.ub_location
        return [Candidate(u.file, u.line, None, f"crash site: {what}")]
    s = report.summary_location
    if s is not None:
        f = Frame(index=0, file=s.file, function=s.function)
        if not is_system_frame(f) and not is_runtime_frame(f):
            return [Candidate(s.file, s.line, s.function, f"crash site: {what}")]
    return []


def _overflow_special(report: SanitizerReport, alloc: list[Frame]) -> list[Candidate]:
    special = [_cand(f, "allocation site of the overflowed buffer (its size)") for f in alloc[:1]]
    if report.stack_variable and (obj := project_frames(report.stack("stack_object"))):
        name, line = report.stack_variable
        if line:
            special.append(
                Candidate(  # the function is the one around the line: when the object's
                    obj[0].file or "",  # function was inlined ('text.i'), the frame names
                    line,  # the function it was inlined into
                    None,
                    f"declaration of the overflowed stack object '{name}'",
                )
            )
    if (g := report.global_variable) is not None and g.line:
        special.append(
            Candidate(g.file, g.line, None, f"definition of the overflowed global '{g.function}'")
        )
    return special


def rank(
    report: SanitizerReport, *, max_callers: int = 3, wrappers: frozenset[str] = frozenset()
) -> list[Candidate]:
    """Candidates, best first (duplicates removed; more than needed, as some may not resolve
    to a file in the tree). ``wrappers``: functions known to be allocation/free wrappers."""
    crash = project_frames(report.crash_stack)
    freed = project_frames(report.stack("freed"))
    alloc = project_frames(report.stack("allocated"))
    origin = project_frames(report.stack("origin"))
    what = (report.crash_type or "crash") + (
        f" ({report.access} of size {report.access_size})"
        if report.access and report.access_size
        else ""
    )
    first = _first(report, crash, what)
    callers = [_cand(f, f"caller #{i} of the crash site") for i, f in enumerate(crash[1:], 1)]
    special: list[Candidate] = []
    tail: list[Candidate] = []
    on_crash = {frame_key(f) for f in crash}
    if report.is_lifetime_bug:
        # the free site: the first frame above the free wrappers; for a double free the first
        # free often sits where the second one crashed, so prefer one that is not on the stack
        decided = _decision(freed, wrappers, on_crash) or _decision(freed, wrappers, set())
        skipped = [f for f in freed if f.function_name in wrappers]
        if decided is not None:
            via = f" (above {', '.join(dict.fromkeys(f.function_name or '?' for f in skipped))})"
            special.append(_cand(decided, "where the object was freed" + (via if skipped else "")))
        if freed and decided is not freed[0]:
            tail.append(_cand(freed[0], "the free wrapper that released the object"))
        made = _decision(alloc, wrappers, set())
        if made is not None:
            special.append(_cand(made, "where the object was allocated"))
        if alloc and made is not alloc[0]:
            tail.append(_cand(alloc[0], "the allocation wrapper that made the object"))
        if report.crash_type == "double-free" and decided is not None:
            # the second free (the crash) is usually the owner's legitimate release; the fix is
            # at the premature first free, so it leads
            special[0].role = "the first free of the object (premature)"
            first, special = special[:1], first + special[1:]
    elif report.is_overflow:
        special = _overflow_special(report, alloc)
    elif origin:
        special.append(_cand(origin[0], "where the uninitialized value was created"))
    elif leak := project_frames(report.stack("leak")):
        first = first or [_cand(leak[0], "allocation of the leaked memory")]
        callers = [
            _cand(f, f"caller #{i} of the leaking allocation") for i, f in enumerate(leak[1:], 1)
        ]
    # interleave: crash site, first special, caller 1, second special, caller 2, ...
    ranked = list(first)
    top_callers = callers[:max_callers]
    for i in range(max(len(special), len(top_callers))):
        ranked += special[i : i + 1] + top_callers[i : i + 1]
    ranked += tail + callers[max_callers:]
    ranked += [_cand(f, "further up the free stack") for f in freed[1:6]]
    ranked += [_cand(f, "further up the allocation stack") for f in alloc[1:4]]
    if not ranked:
        ranked = [
            _cand(f, "fuzz target (no project frame in the report)")
            for f in harness_frames(report.crash_stack)
        ]
    seen: set[tuple[str, int | None, str | None]] = set()
    out = []
    for c in ranked:
        if c.file and c.key not in seen:
            seen.add(c.key)
            out.append(c)
    # the fuzz target's own files (a global or a crash site there) only when nothing else is
    return [c for c in out if not in_harness_path(c.file)] or out
