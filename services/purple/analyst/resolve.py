"""Looking candidates up in the source tree, and shaping what is submitted.

One command finds each candidate's file and reads it around the line (:mod:`.cfunc`: the
lines around it for tree-sitter, the column-0 outline for longer functions); a
frame printed without a line is looked up by its function's definition and stands for that
function's span. Submitted spans never leave the enclosing function or the file: a line past
the end of the file, or a line-less frame whose function cannot be found, is dropped.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from services.purple.analyst.cfunc import (
    FunctionSpan,
    awk_outline,
    awk_window,
    enclosing_function,
    parse_numbered,
)
from services.purple.analyst.ranking import Candidate
from services.shared.loc import Location
from services.shared.sanitizer.frames import split_src_path

MARK = "@@ARVO_ANALYST@@"
MAX_GUARD = 20
"""How far above the line a guarding check may be to open the span."""
MAX_SPAN = 50
"""The judge's line-match cap: a longer span can never match a line."""


@dataclass
class Resolved:
    candidate: Candidate
    rel_path: str
    """Relative to the project root (the folder under the source dir)."""
    fn: FunctionSpan
    path: str = ""
    """Where the file was found (absolute, in the task environment)."""
    n_lines: int | None = None
    """Lines in the file."""
    guard: int | None = None
    """Where the span opens, above the line: the existing check of the bad value
    (:func:`.dataflow.guard_line`) or where a dangling pointer was taken
    (:func:`.lifetime.pointer_taken_at`)."""

    @property
    def line(self) -> int:
        """The frame's line, or the function's first line for a line-less frame."""
        return self.candidate.line or self.fn.start or 1


def _tries(c: Candidate, src: str, folders: list[str]) -> list[str]:
    project, rel = split_src_path(c.file)
    tries = [f"{src}/{project}/{rel}"] if project else []
    if c.file.startswith("/") and not project:
        segs = c.file.strip("/").split("/")
        suffixes = ["/".join(segs[k:]) for k in range(1, max(1, len(segs) - 1))]
    else:
        suffixes = [rel]
        tries.append(f"{src}/{rel}")
    tries += [f"{src}/{d}/{s}" for s in suffixes for d in folders]
    return list(dict.fromkeys(tries))


def _definition_line(name: str) -> str:
    """Shell setting ``$n`` to the line of ``name``'s definition in ``"$f"`` (empty if none):
    the first column-0 line naming it before ``(`` whose body's ``{`` follows (at the end of
    that line or of one of the next three, or at the start of one of them) before any ``;``
    (which would make it a prototype)."""
    word = name.rsplit("::", 1)[-1]
    opens = r"(/^[{]/ || /[)][ \t]*[{][ \t]*$/)"
    prog = (
        f"c && NR<=c+3 && {opens} {{print c; exit}} "
        "c && (NR>c+3 || /;[ \t]*$/) {c=0} "
        f"!c && /^[A-Za-z_].*(^|[^A-Za-z0-9_]){word}[ \t]*[(]/ && !/;[ \t]*$/ "
        f"{{c=NR; if ({opens}) {{print c; exit}}}}"
    )
    return f'n=$(awk {shlex.quote(prog)} "$f")'


def resolve_command(
    candidates: list[Candidate], src: str, folders: list[str], wanted: set[int]
) -> str:
    """One command: for each wanted candidate, its file, its anchor line, the file's length,
    and the outline around the anchor."""
    parts = []
    for i, c in enumerate(candidates):
        if i not in wanted or (c.line is None and not c.function):
            continue
        quoted = " ".join(shlex.quote(t) for t in _tries(c, src, folders))
        find = f"n={c.line}" if c.line is not None else _definition_line(c.function or "")
        outline = awk_outline('"$f"', "$n", max_lines=30) + "; " + awk_window('"$f"', "$n")
        parts.append(
            f'f=\'\'; for c in {quoted}; do if [ -f "$c" ]; then f="$c"; break; fi; done; '
            f'if [ -n "$f" ]; then {find}; fi; '
            f'if [ -n "$f" ] && [ -n "$n" ]; then echo "{MARK} {i} $n $(wc -l <"$f") $f"; '
            f"{outline}; fi"
        )
    return "( " + "\n".join(parts) + " )"


def parse_resolved(output: str, candidates: list[Candidate], src: str) -> list[Resolved]:
    resolved: list[Resolved] = []
    for block in output.split(MARK)[1:]:
        head, _, body = block.partition("\n")
        fields = head.strip().split(" ", 3)
        if len(fields) < 4 or not all(x.isdigit() for x in fields[:3]):
            continue
        index, anchor, n_lines, path = int(fields[0]), int(fields[1]), int(fields[2]), fields[3]
        c = candidates[index]
        rel = path[len(src) + 1 :] if path.startswith(src + "/") else path
        rel = rel.split("/", 1)[1] if "/" in rel else rel  # drop the project folder
        fn = enclosing_function(parse_numbered(body), anchor, path=path, name=c.function)
        if c.line is None and (fn.start != anchor or fn.end is None):
            continue  # a line-less frame whose definition was not found: never guess
        if anchor > n_lines + 1:  # the last line may lack its newline
            continue
        resolved.append(Resolved(c, rel, fn, path, n_lines + 1))
    return resolved


def span(r: Resolved, before: int = 3, after: int = 1) -> tuple[int, int]:
    """The lines submitted for a resolved candidate: for a frame line, the guard region just
    before it (a missing check goes right above the access or the call; an existing check of
    the bad value a few lines up opens the span there) and the line after; for a line-less
    frame, its function. Always inside the function (when known) and the
    file."""
    fn, line = r.fn, r.candidate.line
    top = r.n_lines or 10**9
    if line is None:
        lo, hi = fn.start or 1, min(fn.end or top, (fn.start or 1) + MAX_SPAN - 1)
        return lo, min(hi, top)
    lo, hi = max(1, line - before), line + after
    inside = fn.start is not None and fn.start <= line and (fn.end is None or line <= fn.end)
    if r.guard is not None and 0 < line - r.guard < MAX_GUARD:
        lo = min(lo, r.guard)  # from the check that should have stopped it to the access
    if inside:
        lo = max(lo, fn.body_start or fn.start or lo)
        if fn.end is not None:
            hi = min(hi, fn.end)
    return max(1, min(lo, line)), min(max(hi, line), top)


def locations(
    resolved: list[Resolved], max_locations: int = 5, before: int = 3, after: int = 1
) -> list[Location]:
    """The submitted locations: one per function (recursion collapsed: a function that fills
    the stack takes one place), no overlapping spans, at most ``max_locations``."""
    out: list[Location] = []
    functions: set[tuple[str, str]] = set()
    for r in resolved:
        lo, hi = span(r, before, after)
        name = r.candidate.function or r.fn.name
        if name and (r.rel_path, name) in functions:
            continue
        if any(
            loc.file == r.rel_path and lo <= loc.line_end and hi >= loc.line_start for loc in out
        ):
            continue
        if name:
            functions.add((r.rel_path, name))
        out.append(
            Location(
                file=r.rel_path,
                function=name,
                line_start=lo,
                line_end=hi,
                description=r.candidate.role,
            )
        )
        if len(out) >= max_locations:
            break
    return out
