"""Function definitions by a brace scanner, for C/C++ that derails tree-sitter (macros, ``#if``).

Comments, strings and preprocessor lines are masked; only the first branch of an ``#if`` counts;
each top-level ``{...}`` block is named from the text before it.
"""

from __future__ import annotations

import bisect
import re

from services.green.kinds.arvo.scoring.names import name_from_declaration
from services.green.kinds.arvo.scoring.spans import FunctionSpan


def _mask(text: str) -> str:
    """Blank out comments, string/char literals (keeping newlines) so braces in them vanish."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif ch == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
        else:
            i += 1
            continue
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return "".join(out)


# after masking, ``extern "C" {`` reads ``extern     {``
_TRANSPARENT = re.compile(r"(?:\bnamespace\b[^;{}()]*|\bextern)$")


def _heuristic_functions(text: str) -> list[FunctionSpan]:
    masked = _mask(text)
    # blank out preprocessor lines (with continuations) and braces in non-first #if branches
    lines = masked.split("\n")
    cond: list[bool] = []  # per open #if: are we in its first branch?
    in_directive = False
    for idx, line in enumerate(lines):
        stripped = line.lstrip()
        if in_directive or stripped.startswith("#"):
            if not in_directive:
                word = re.match(r"#\s*(\w+)", stripped)
                kw = word.group(1) if word else ""
                if kw in ("if", "ifdef", "ifndef"):
                    cond.append(True)
                elif kw in ("else", "elif", "elifdef", "elifndef") and cond:
                    cond[-1] = False
                elif kw == "endif" and cond:
                    cond.pop()
            in_directive = line.rstrip().endswith("\\")
            lines[idx] = " " * len(line)
            continue
        if not all(cond):
            lines[idx] = re.sub(r"[{}]", " ", line)
    masked = "\n".join(lines)

    newlines = [i for i, ch in enumerate(masked) if ch == "\n"]

    def line_of(offset: int) -> int:
        return bisect.bisect_right(newlines, offset - 1) + 1

    found: list[FunctionSpan] = []
    kinds: list[str] = []  # stack of 'block' / 'transparent'
    boundary = 0
    header_start = 0
    for pos, ch in enumerate(masked):
        if ch == "{":
            if "block" not in kinds:
                before = masked[boundary:pos]
                if _TRANSPARENT.search(before.strip()):
                    kinds.append("transparent")
                    boundary = pos + 1
                    continue
                header_start = boundary
            kinds.append("block")
        elif ch == "}" and kinds:
            kind = kinds.pop()
            if kind == "transparent" or "block" not in kinds:
                if kind == "block":
                    header = masked[header_start:]
                    header = header[: header.find("{")]
                    named = _name_from_header(header)
                    if named is not None:
                        (name, qualified), offset = named
                        found.append(
                            FunctionSpan(
                                name=name,
                                qualified=qualified,
                                start_line=line_of(header_start + offset),
                                end_line=line_of(pos),
                                source="heuristic",
                            )
                        )
                boundary = pos + 1
    return found


def _name_from_header(header: str) -> tuple[tuple[str, str], int] | None:
    """Name a top-level block from the text before its '{' (None: not a function), with the
    offset in ``header`` where its declaration starts. The text is split at ';' so earlier
    declarations drop out, and the last piece with a '(' is the declaration: K&R parameter
    declarations (``int f(a) int a; {``) come after it and hold no '('."""
    offset = 0
    pieces: list[tuple[int, str]] = []
    for piece in header.split(";"):
        pieces.append((offset, piece))
        offset += len(piece) + 1
    for off, piece in reversed(pieces):
        if "(" not in piece:
            continue
        stripped = piece.strip()
        if re.match(r"^(?:typedef\s+)?(?:struct|union|enum|class)\b[^()]*$", stripped):
            return None
        named = name_from_declaration(piece)
        if named is None:
            return None
        return named, off + len(piece) - len(piece.lstrip())
    return None
