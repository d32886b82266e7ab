"""The function that encloses a line: tree-sitter on the lines around it, else a column-0 outline.

The analyst sees the task's files only through commands whose output green caps (64 KiB by
default, head and tail), and it resolves up to a handful of frames in one command, so it
cannot fetch whole files to parse. Each lookup therefore fetches (with awk, which every image
has) two things: the lines around the target line (:func:`awk_window`, ``WINDOW_BEFORE`` above
and ``WINDOW_AFTER`` below), and the column-0 outline up to it (:func:`awk_outline`: the lines
that start in column 0 with an identifier, ``{`` or ``}``, and the first column-0 ``}`` after
it).

1. **tree-sitter** (the C grammar for ``.c``, the C++ grammar for C++ files, C then C++ for
   headers) parses the contiguous lines around the target. A ``function_definition`` that
   contains the line, whose header and closing ``}`` both lie inside those lines (so the parse
   saw all of it) is the answer; its name must agree with the frame's when one is known. This
   is exact, also for C++ methods defined inside a class body (indented, so no column-0 rule
   sees them).
2. **column-0 outline** when the function is longer than the window (its header or its end lies
   outside the lines fetched): in the usual C styles a function definition starts in column 0
   (``static int`` / ``foo(int a)`` / ``{`` or ``int foo(int a) {``) and ends with ``}`` in
   column 0. tree-sitter cannot do this part: it needs the function's whole text, which the
   capped output cannot carry for long functions; the outline needs a few lines per function.
   Methods inside a class body stay unknown here; callers then fall back to a plain window.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from tree_sitter import Node

from services.purple.analyst.clex import ts_parser

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


WINDOW_BEFORE = 30
WINDOW_AFTER = 20
WINDOW_BYTES = 2400
"""Lines fetched around a target line for tree-sitter: at most ``WINDOW_BEFORE`` above and
``WINDOW_AFTER`` below, each cut at 120 characters, grown from the line outwards while they fit
in ``WINDOW_BYTES`` (so ten candidates in one command, with their outlines, stay below green's
64 KiB output cap even in a file of long lines)."""


def awk_window(path_expr: str, line: int | str) -> str:
    """Shell printing ``N: text`` for the lines around ``line`` (see ``WINDOW_BYTES``;
    ``path_expr`` and a string ``line`` inserted verbatim, as in :func:`awk_outline`)."""
    prog = (
        f"NR>=t-{WINDOW_BEFORE} && NR<=t+{WINDOW_AFTER} {{l[NR]=substr($0,1,120)}} "
        f"NR>t+{WINDOW_AFTER} {{exit}} "
        "END {lo=t; hi=t-1; b=0; g=1; while (g) {g=0; "
        f"if ((hi+1) in l && b+length(l[hi+1])+8 <= {WINDOW_BYTES}) {{hi++; b+=length(l[hi])+8; g=1}} "
        f"if ((lo-1) in l && lo<=hi && b+length(l[lo-1])+8 <= {WINDOW_BYTES}) "
        "{lo--; b+=length(l[lo])+8; g=1}} "
        'for (i=lo; i<=hi; i++) print i": "l[i]}'
    )
    return f"awk -v t={line} {shlex.quote(prog)} {path_expr}"


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


def enclosing_function(
    outline: dict[int, str], line: int, *, path: str = "", name: str | None = None
) -> FunctionSpan:
    """The function around ``line`` from numbered lines (:func:`parse_numbered` of
    :func:`awk_window` and/or :func:`awk_outline` output): tree-sitter on the contiguous lines
    around ``line`` first, the column-0 outline second. ``path`` picks the grammar; ``name``
    (a frame's function, ``ns::Cls::fn`` or ``fn``), when given, must agree with what
    tree-sitter found."""
    found = parsed_function(outline, line, path, name)
    if found is not None:
        return found
    return _outline_function(
        {n: t for n, t in outline.items() if t[:1].isalpha() or t[:1] in "_{}"}, line
    )


def _outline_function(outline: dict[int, str], line: int) -> FunctionSpan:
    """The column-0 heuristic over an :func:`awk_outline` listing."""
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


# ---- tree-sitter --------------------------------------------------------------------------

_CPP_EXTENSIONS = (".cc", ".cpp", ".cxx", ".c++", ".hh", ".hpp", ".hxx", ".ipp", ".tcc")
_NAME_TYPES = frozenset(
    {"identifier", "field_identifier", "qualified_identifier", "destructor_name", "operator_name"}
)


def _grammars(path: str) -> tuple[str, ...]:
    lower = path.lower()
    if lower.endswith(".c"):
        return ("c",)
    if lower.endswith(_CPP_EXTENSIONS):
        return ("cpp",)
    return ("c", "cpp")  # a header, or unknown: either language, the name decides


def parsed_function(
    lines: dict[int, str], line: int, path: str = "", name: str | None = None
) -> FunctionSpan | None:
    """The innermost ``function_definition`` around ``line`` that tree-sitter finds in the
    contiguous run of ``lines`` holding it, when the run shows all of it (header from the
    run's second line on, unless the run starts the file, and a closing ``}`` that is really
    there); None otherwise."""
    if line not in lines:
        return None
    first = last = line
    while first - 1 in lines:
        first -= 1
    while last + 1 in lines:
        last += 1
    text = "\n".join(lines[n] for n in range(first, last + 1)).encode("utf-8", "surrogateescape")
    want = name.rsplit("::", 1)[-1] if name else None
    for grammar in _grammars(path):
        for node in _around(ts_parser(grammar).parse(text).root_node, line - first):
            start, end = node.start_point.row + first, node.end_point.row + first
            body = node.child_by_field_name("body")
            found = _declared_name(node)
            if (
                body is None
                or node.has_error  # e.g. a class behind an export macro read as a function
                or (start == first and first != 1)
                or end >= last
                or body.children[-1].type != "}"
                or body.children[-1].is_missing
                or (want is not None and (found or "").rsplit("::", 1)[-1] != want)
            ):
                continue
            return FunctionSpan(start, body.start_point.row + first, end, found)
    return None


def _around(node: Node, row: int) -> list[Node]:
    """The ``function_definition`` nodes whose rows hold ``row``, innermost first."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if not n.start_point.row <= row <= n.end_point.row:
            continue
        if n.type == "function_definition":
            out.append(n)
        stack.extend(n.children)
    return sorted(out, key=lambda n: n.end_byte - n.start_byte)


def _declared_name(fn: Node) -> str | None:
    """The name a ``function_definition`` declares: its declarator, unwrapped (pointer and
    reference returns, parentheses) down to the name (``ns::Cls::fn``, ``operator()``)."""
    node = fn.child_by_field_name("declarator")
    while node is not None and node.type not in _NAME_TYPES:
        inner = node.child_by_field_name("declarator")
        if inner is None:
            inner = next(
                (
                    c
                    for c in node.named_children
                    if c.type in _NAME_TYPES or c.type.endswith("declarator")
                ),
                None,
            )
        node = inner
    return node.text.decode("utf-8", "replace") if node is not None and node.text else None
