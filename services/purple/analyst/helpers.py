"""Functions on no stack that computed an overflowed buffer's size.

The allocation site of an overflowed buffer shows how much was allocated, and often a project
helper computed that size (``glyph_size(h)``, ``row_len(w, bpp)``) and returned long before the
crash: it is on no stack. This module reads the size expression at the allocation line and the
lines before it that set the variables or members it uses, takes the project functions called
there (never the allocator or libc), and finds their definitions in the tree with ``grep``.
"""

from __future__ import annotations

import re
import shlex

from services.purple.analyst.caccess import call_arguments
from services.purple.analyst.cfunc import FunctionSpan, enclosing_function, parse_numbered
from services.purple.analyst.clex import KEYWORDS, clean, text_of, tokenize
from services.purple.analyst.dataflow import FrameCode
from services.purple.analyst.frameread import awk_frame, frame_code
from services.purple.analyst.ranking import Candidate
from services.purple.analyst.resolve import MARK, Resolved
from services.purple.analyst.wrappers import calls_in
from services.purple.tools.rca import RcaTools
from services.shared.sanitizer.frame_roles import RUNTIME_FUNCTIONS

_ALLOCATORS = ("malloc", "calloc", "realloc", "reallocarray", "aligned_alloc", "memalign")
_SIZE_NAME_RE = re.compile(r"(size|len|length|bytes|count|stride|capacity|cap|num)", re.I)
_ALLOC_NAME_RE = re.compile(r"alloc|^x?new|_new$|dup$", re.I)
MAX_HELPERS = 2
HELPER_ROLE = "computes the size of the overflowed buffer"


def _size_text(statement: str) -> str:
    """The size arguments of the allocator call in ``statement``, or the whole statement."""
    for name in _ALLOCATORS:
        args = call_arguments(statement, name)
        if args:
            return ", ".join(text_of(a) for a in (args[1:] if name == "realloc" else args))
    return statement


def size_callees(code: FrameCode) -> list[str]:
    """Project functions called in the allocation's size (not allocators), or, with a size-like
    name (``*_size``, ``*_len``...), on the last line before it that set one of the size's
    variables or members; size-like names first."""
    size = _size_text(code.statement)
    texts = [size]
    names = {t.text for t in tokenize(clean(size)) if t.kind == "id" and t.text not in KEYWORDS}
    for line in reversed(code.body_before.splitlines()):
        for n in list(names):
            if re.search(rf"(?<![\w]){re.escape(n)}\s*=(?!=)", clean(line)):
                texts.append(line.split("=", 1)[1])
                names.discard(n)
    callees = []
    for depth, t in enumerate(texts):
        callees += [
            c
            for c in calls_in(t)
            if c not in RUNTIME_FUNCTIONS
            and c not in _ALLOCATORS
            and not c.isupper()
            and not _ALLOC_NAME_RE.search(c)  # a project allocator, not a size
            and (depth == 0 or _SIZE_NAME_RE.search(c))  # further away: size-like names only
        ]
    unique = list(dict.fromkeys(callees))
    unique.sort(key=lambda c: not _SIZE_NAME_RE.search(c))
    return unique[:MAX_HELPERS]


def helper_command(names: list[str], src: str, folders: list[str]) -> str:
    """One command: for each name, its definition in the project's C files (file and line),
    then the outline of that file around it."""
    roots = " ".join(shlex.quote(f"{src}/{d}") for d in folders) or shlex.quote(src)
    parts = []
    for i, name in enumerate(names):
        pattern = shlex.quote(rf"^[A-Za-z_].*(^|[^A-Za-z0-9_]){name}[[:space:]]*\(")
        prog = 'NR<=t && /^[A-Za-z_{}]/ {print NR": "substr($0,1,120)} NR>t && /^}/ {print NR": "substr($0,1,120); exit}'
        parts.append(
            f"hit=$(grep -rnE --include='*.c' --include='*.cc' --include='*.cpp' {pattern} "
            f"{roots} 2>/dev/null | grep -v ';[[:space:]]*$' | head -n 1); "
            f'if [ -n "$hit" ]; then f="${{hit%%:*}}"; r="${{hit#*:}}"; n="${{r%%:*}}"; '
            f'echo "{MARK} {i} $n $(wc -l <"$f") $f"; '
            f'awk -v t="$n" {shlex.quote(prog)} "$f" | tail -n 30; fi'
        )
    return "( " + "\n".join(parts) + " )"


def parse_helpers(output: str, names: list[str], src: str, alloc_file: str) -> list[Resolved]:
    """The helpers found, as resolved line-less candidates standing for their whole span."""
    out: list[Resolved] = []
    for block in output.split(MARK)[1:]:
        head, _, body = block.partition("\n")
        fields = head.strip().split(" ", 3)
        if len(fields) < 4 or not all(x.isdigit() for x in fields[:3]):
            continue
        i, anchor, n_lines, path = int(fields[0]), int(fields[1]), int(fields[2]), fields[3]
        fn: FunctionSpan = enclosing_function(parse_numbered(body), anchor)
        if fn.start != anchor or fn.end is None or fn.name != names[i]:
            continue
        rel = path[len(src) + 1 :] if path.startswith(src + "/") else path
        rel = rel.split("/", 1)[1] if "/" in rel else rel
        role = f"{HELPER_ROLE} ({names[i]}, called at its allocation)"
        cand = Candidate(path, None, names[i], role)
        out.append(Resolved(cand, rel, fn, path, n_lines + 1))
    return out


async def size_helpers(
    tools: RcaTools, resolved: list[Resolved], folders: list[str]
) -> list[Resolved]:
    """Two commands: read the overflowed buffer's allocation site, then find the project
    functions that computed its size (a ``*_size``/``*_len`` helper called there or on the
    line that set the size variable), which are on no stack, and rank them right after it."""
    at = next(
        (i for i, r in enumerate(resolved) if r.candidate.role.startswith("allocation site")),
        None,
    )
    if at is None or not resolved[at].fn.start:
        return resolved
    r = resolved[at]
    cmd = awk_frame(shlex.quote(r.path), r.fn.start or 1, r.line, r.fn.end)
    lines = parse_numbered((await tools.execute(cmd)).output)
    code = frame_code(r.candidate.function or "", r.rel_path, r.line, None, r.fn.start, lines)
    names = size_callees(code)
    if not names:
        return resolved
    src = tools.paths.source_dir.rstrip("/")
    output = (await tools.execute(helper_command(names, src, folders))).output
    helpers = parse_helpers(output, names, src, r.candidate.file)
    return [*resolved[: at + 1], *helpers, *resolved[at + 1 :]]
