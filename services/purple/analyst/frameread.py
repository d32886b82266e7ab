"""Reading crash-stack frames through the environment: the awk command and its parsed lines."""

from __future__ import annotations

import re
import shlex

from services.purple.analyst.caccess import parse_params
from services.purple.analyst.clex import clean
from services.purple.analyst.dataflow import FrameCode


def awk_frame(
    path_expr: str, start: int, line: int, end: int | None, *, before: int = 150, after: int = 40
) -> str:
    """Shell printing ``N: text`` for the lines of the function that starts at ``start`` that
    this module needs: its header (the first lines), the frame's line and the few after it, and
    the lines that may assign something (``=``, ``++``, ``--``, ``&``) or check something
    (``if``/``while``/``for``) from ``before`` lines above the frame's line to the function's
    end (at most ``after`` lines below).
    ``path_expr`` is inserted verbatim; read the output with :func:`.cfunc.parse_numbered`."""
    stop = min(end, line + after) if end is not None and end >= line else line + 6
    head = min(line, start + 12)
    prog = (
        f"NR<{start} {{next}} NR>{stop} {{exit}} "
        f"NR<={head} || (NR>={line} && NR<={line + 6}) || "
        f"(NR>={max(start, line - before)} && /[=&]|[+][+]|--|{_CHECK_AWK}/) "
        '{print NR": "substr($0,1,300)}'
    )
    return f"awk {shlex.quote(prog)} {path_expr}"


_CHECK_AWK = r"(^|[^A-Za-z0-9_])(if|while|for)[ \t]*[(]"
_CHECK_RE = re.compile(r"^\s*(?:}\s*)?(?:else\s+)?(?:if|while|for)\s*\(")


def _depth(text: str) -> int:
    c = clean(text)
    return c.count("(") - c.count(")")


def statement_at(lines: dict[int, str], line: int) -> str:
    """The frame's line and, while parentheses stay open, the lines after it."""
    if line not in lines:
        return ""
    out, depth, n = [lines[line]], _depth(lines[line]), line + 1
    while depth > 0 and n in lines and n <= line + 6:
        out.append(lines[n])
        depth += _depth(lines[n])
        n += 1
    return "\n".join(out)


def frame_code(
    function: str,
    file: str,
    line: int,
    column: int | None,
    start: int,
    lines: dict[int, str],
) -> FrameCode:
    """A :class:`FrameCode` from the lines :func:`awk_frame` printed."""
    header_lines, depth, opened, header_end = [], 0, False, None
    n = start
    while n in lines and n <= line:
        header_lines.append(lines[n])
        d = _depth(lines[n])
        depth += d
        opened = opened or "(" in clean(lines[n])
        if opened and depth <= 0:
            header_end = n
            break
        n += 1
    params = parse_params("\n".join(header_lines), function) if header_end else None
    after_header = {k: v for k, v in lines.items() if header_end is not None and k > header_end}
    return FrameCode(
        function=function,
        file=file,
        line=line,
        column=column,
        params=params,
        statement=statement_at(lines, line),
        body_before="\n".join(v for k, v in sorted(after_header.items()) if k < line),
        body="\n".join(v for _, v in sorted(after_header.items())),
        checks=[(k, v) for k, v in sorted(after_header.items()) if k < line and _CHECK_RE.match(v)],
    )
