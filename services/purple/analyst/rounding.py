"""Rounding mismatch: the overflowed buffer's size rounds a quantity down that the access rounds up.

A buffer sized from ``height * (width / 8)`` bytes and filled row by row with
``(width + 7) / 8`` bytes per row is too small whenever ``width`` is not a multiple of 8: the
size and the access are two expressions of the same quantity that disagree on its rounding, and
the fill runs off the end of the buffer, exactly at its end. The index is then correct and the
*size* is the bug (CWE-131): the fix belongs where the size rounds down, often a ``*_size``
helper on no stack. This module finds such divisions lexically:

- a division of a dividend by a constant power of two ``K`` (``/ 8``, ``>> 3``, ``/ CHAR_BIT``)
  rounds *up* when the dividend is ``(X + K - 1)`` and *down* otherwise;
- the quantity is the names in ``X`` (the last member of ``h->width``, not ``h``).

A mismatch needs a round-down of a quantity on the size's side and a round-up of the same
quantity by the same ``K`` on the access's side, and no round-up of it on the size's side.
Nothing else (``0 bytes after`` alone is the shape of most heap overflows, fixed at the access).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from services.purple.analyst.clex import (
    KEYWORDS,
    MACRO_CONST_RE,
    Tok,
    clean,
    match_back,
    split_top,
    strip_casts,
    text_of,
    tokenize,
)
from services.purple.analyst.resolve import MARK

_INT_RE = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*$")
_AT_END_RE = re.compile(r"^0 bytes (?:after|to the right of)\b")
_NAMED = {"CHAR_BIT": 8}


@dataclass(frozen=True)
class Division:
    quantity: frozenset[str]
    """The names the dividend is made of (members by their last name)."""
    divisor: int
    up: bool
    text: str


def at_buffer_end(region: str | None) -> bool:
    """ASan's ``0 bytes after N-byte region``: the access started exactly at the buffer's end."""
    return bool(region and _AT_END_RE.match(region.strip()))


def _int(tok: Tok | None) -> int | None:
    if tok is None:
        return None
    if tok.text in _NAMED:
        return _NAMED[tok.text]
    m = _INT_RE.match(tok.text)
    return int(m.group(1), 0) if m and tok.kind == "num" else None


def _operand_start(toks: list[Tok], j: int) -> int | None:
    """Start of the postfix operand ending at ``toks[j]``: a name with members, subscripts and
    calls (``h->w``, ``a[i].n``, ``f(x)``), a number, or a parenthesised group."""
    while j >= 0:
        t = toks[j]
        if t.text in (")", "]"):
            k = match_back(toks, j)
            if k is None:
                return None
            prev = toks[k - 1] if k else None
            if t.text == "]" or (
                prev is not None and prev.kind == "id" and prev.text not in KEYWORDS
            ):
                j = k - 1  # a subscript or a call: its base comes before
                continue
            return k
        if t.kind in ("id", "num"):
            if j >= 2 and toks[j - 1].text in ("->", "."):
                j -= 2
                continue
            return j
        return None
    return None


def _dividend(toks: list[Tok], op: int) -> list[Tok] | None:
    """The multiplicative chain left of the division operator at ``toks[op]``."""
    start = _operand_start(toks, op - 1)
    while start is not None and start >= 2 and toks[start - 1].text in ("*", "/", "%"):
        if toks[start - 1].text == "*" and toks[start - 2].text in ("(", ",", "=", "return"):
            break  # a dereference, not a product
        start = _operand_start(toks, start - 2)
    return toks[start:op] if start is not None else None


def _unwrap(toks: list[Tok]) -> list[Tok]:
    while len(toks) >= 2 and toks[0].text == "(" and match_back(toks, len(toks) - 1) == 0:
        toks = toks[1:-1]
    return toks


def _names(toks: list[Tok]) -> frozenset[str]:
    """The names a quantity is made of: ``h->width`` is ``width``, ``a[i].len`` is ``len``."""
    flat: list[Tok] = []
    depth = 0
    for t in toks:  # subscripts out: they pick an element, they are not the quantity
        depth += t.text == "["
        if depth == 0:
            flat.append(t)
        depth -= t.text == "]" and depth > 0
    out = set()
    for i, t in enumerate(flat):
        nxt = flat[i + 1].text if i + 1 < len(flat) else ""
        if t.kind != "id" or t.text in KEYWORDS or MACRO_CONST_RE.match(t.text) or nxt == "(":
            continue
        if nxt in ("->", ".", "]"):
            continue  # the member names the quantity, not the struct
        out.add(t.text)
    return frozenset(out)


def _rounds_up(terms: list[list[Tok]], divisor: int) -> list[Tok] | None:
    """The rest of ``X + (K - 1)``: the terms other than the rounding addend, or None."""
    for i, term in enumerate(terms):
        t = _unwrap(term)
        value = _int(t[0]) if len(t) == 1 else None
        if len(t) == 3 and t[1].text == "-" and _int(t[0]) == divisor and _int(t[2]) == 1:
            value = divisor - 1
        if value == divisor - 1 and len(terms) > 1:
            return [x for k, other in enumerate(terms) if k != i for x in other]
    return None


def _shown(dividend: list[Tok], op: Tok, divisor: Tok) -> str:
    """The division as written, without the casts (``(x + 7) / 8``)."""
    return re.sub(r"([(\[])\s+", r"\1", f"{text_of(dividend)} {op.text} {divisor.text}")


def divisions(text: str) -> list[Division]:
    """The divisions of ``text`` by a constant power of two, each rounding up or down."""
    toks = strip_casts(tokenize(clean(text)))
    out = []
    for op, t in enumerate(toks):
        if t.text not in ("/", ">>") or op + 1 >= len(toks):
            continue
        k = _int(toks[op + 1])
        divisor = (1 << k if k is not None and k < 31 else None) if t.text == ">>" else k
        if not divisor or divisor < 2 or divisor & (divisor - 1):
            continue
        dividend = _dividend(toks, op)
        if not dividend:
            continue
        inner = _unwrap(dividend)
        rest = _rounds_up(split_top(inner, "+"), divisor) if inner is not dividend else None
        up = rest is not None
        quantity = _names(rest if rest is not None else dividend)
        if quantity:
            out.append(Division(quantity, divisor, up, _shown(dividend, t, toks[op + 1])))
    return out


def mismatch(size_text: str, access_text: str) -> tuple[Division, Division] | None:
    """A round-down on the size's side of a quantity that the access's side rounds up by the
    same divisor (and that the size's side never rounds up): ``(down, up)``, or None."""
    size = divisions(size_text)
    access = divisions(access_text)
    for down in (d for d in size if not d.up):
        if any(s.up and s.divisor == down.divisor and s.quantity & down.quantity for s in size):
            continue
        for up in (a for a in access if a.up and a.divisor == down.divisor):
            if up.quantity & down.quantity:
                return down, up
    return None


def describe(down: Division, up: Division) -> str:
    q = ", ".join(sorted(down.quantity & up.quantity))
    return (
        f"rounds {q} down (`{down.text}`) where the access rounds it up (`{up.text}`): "
        "the buffer is short by the partial unit"
    )


def bodies_command(names: list[str], roots: str) -> str:
    """One command: each named function's definition in the project's C files, its body
    printed as ``N: text`` lines after a ``{MARK} i`` header (at most 40 lines)."""
    parts = []
    for i, name in enumerate(names):
        pattern = shlex.quote(rf"^[A-Za-z_].*(^|[^A-Za-z0-9_]){name}[[:space:]]*\(")
        prog = 'NR>=t && NR<t+40 {print NR": "substr($0,1,200)} NR>=t && /^}/ {exit}'
        parts.append(
            f"hit=$(grep -rnE --include='*.c' --include='*.cc' --include='*.cpp' {pattern} "
            f"{roots} 2>/dev/null | grep -v ';[[:space:]]*$' | head -n 1); "
            f'if [ -n "$hit" ]; then f="${{hit%%:*}}"; r="${{hit#*:}}"; n="${{r%%:*}}"; '
            f'echo "{MARK} {i}"; awk -v t="$n" {shlex.quote(prog)} "$f"; fi'
        )
    return "( " + "\n".join(parts) + " )"
