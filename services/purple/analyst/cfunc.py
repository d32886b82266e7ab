"""A small C/C++ heuristic for the function that encloses a line, from column-0 lines only.

The container is asked (with awk, which every image has) for the lines up to the target line
that start in column 0 with an identifier, ``{`` or ``}``, and for the first ``}`` in column 0
after it. In the usual C styles a function definition starts in column 0 (``static int`` /
``foo(int a)`` / ``{`` or ``int foo(int a) {``) and ends with ``}`` in column 0. Methods defined
inside a class body are indented and stay unknown; callers then fall back to a plain window.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

_KEYWORDS = (
    "if",
    "for",
    "while",
    "switch",
    "return",
    "else",
    "do",
    "case",
    "goto",
    "typedef",
    "struct",
    "union",
    "enum",
    "class",
    "namespace",
    "extern",
    "using",
    "template",
    "default",
    "sizeof",
)
_HEADER_RE = re.compile(r"^(?!(?:{})\b)[A-Za-z_][^;={{}}(]*\(".format("|".join(_KEYWORDS)))
_NAME_RE = re.compile(r"([A-Za-z_~][\w:~]*)\s*$")
_STRUCT_HEADER_RE = re.compile(
    r"^(?:(?:static|extern|inline|const)\s+)*(?:struct|union|enum)\s+\w+[\s*]+[A-Za-z_]\w*\s*\("
)
"""A definition returning a struct/union/enum type: ``struct node *find(...)``."""


@dataclass(frozen=True)
class FunctionSpan:
    start: int | None
    """First line of the function (its header), if found."""
    body_start: int | None
    end: int | None
    """The closing ``}`` line, if found."""
    name: str | None


def awk_outline(path_expr: str, line: int | str, max_lines: int = 60) -> str:
    """Shell printing ``N: text`` for the column-0 lines up to ``line`` (the last ``max_lines``
    of them) and the first column-0 ``}`` after it. ``path_expr`` is inserted verbatim (a
    quoted path or ``"$f"``); so is ``line`` when it is a string (a shell variable: ``"$n"``)."""
    prog = (
        'NR<=t && /^[A-Za-z_{}]/ {print NR": "substr($0,1,120)} '
        'NR>t && /^}/ {print NR": "substr($0,1,120); exit}'
    )
    return f"awk -v t={line} {shlex.quote(prog)} {path_expr} | tail -n {max_lines}"


def parse_numbered(text: str) -> dict[int, str]:
    """``{N: text}`` from the ``N: text`` lines that :func:`awk_outline` (and
    :func:`.dataflow.awk_frame`) print."""
    out: dict[int, str] = {}
    for raw in text.splitlines():
        num, sep, rest = raw.partition(": ")
        if sep and num.strip().isdigit():
            out[int(num)] = rest
        elif raw.endswith(":") and raw[:-1].strip().isdigit():
            out[int(raw[:-1])] = ""
    return out


def enclosing_function(outline: dict[int, str], line: int) -> FunctionSpan:
    """Find the function around ``line`` from an :func:`awk_outline` listing
    (:func:`parse_numbered`)."""
    before = [(n, t) for n, t in outline.items() if n <= line]
    after = [n for n, t in outline.items() if n >= line and t.startswith("}")]
    end = after[0] if after else None
    body_start = start = name = None
    for i in range(len(before) - 1, -1, -1):
        n, text = before[i]
        if text.startswith("}"):
            if n == line:  # the target line is itself a closing brace
                continue
            break  # a function ended before our line and no header was seen since
        if text.startswith("{"):
            body_start = n
            continue
        m = _HEADER_RE.match(text) or _STRUCT_HEADER_RE.match(text)
        if m and not text.rstrip().endswith(";"):
            found = _NAME_RE.search(m.group(0)[:-1])
            start, name = n, found.group(1) if found else None
            if body_start is None and text.rstrip().endswith("{"):
                body_start = n
            # a return type on the line(s) just above ("static int" / "foo(void)")
            j = i - 1
            while j >= 0 and before[j][0] >= start - 2 and _is_type_line(before[j][1]):
                start = before[j][0]
                j -= 1
            break
        if body_start is not None:
            break  # text between a "{" and the header that is not a header: give up
    if start is None:
        return FunctionSpan(None, None, end, None)
    return FunctionSpan(start, body_start or start, end, name)


def _is_type_line(text: str) -> bool:
    t = text.strip()
    return (
        bool(t)
        and "(" not in t
        and not t.endswith((";", "{", "}", ","))
        and "=" not in t
        and not t.startswith(_KEYWORDS[:9])
        and len(t.split()) <= 5
    )


def tight_span(line: int, fn: FunctionSpan, context: int = 2) -> tuple[int, int]:
    """``line - context .. line + context``, clipped to the function when it is known."""
    lo, hi = max(1, line - context), line + context
    if fn.start is not None and fn.start <= line:
        lo = max(lo, fn.body_start or fn.start)
    if fn.end is not None and fn.end >= line:
        hi = min(hi, fn.end)
    return min(lo, line), max(hi, line)
