"""A small C lexer for the dataflow heuristics: tokens, brackets, casts (no preprocessor)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from services.shared.c_words import C_TYPE_WORDS

_TOKEN_RE = re.compile(
    r"\s+|(?P<id>[A-Za-z_]\w*)|(?P<num>\.?\d[\w.]*(?:[eEpP][-+]\d+)?)"
    r"|(?P<op>->\*?|\+\+|--|<<=|>>=|<<|>>|::|&&|\|\||\.\.\.|[-+*/%&|^!=<>]=|[^\s\w])"
)
_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?(?:\*/|$)", re.S)
_LINE_COMMENT_RE = re.compile(r"//.*$", re.M)
MACRO_CONST_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")

TYPE_WORDS = C_TYPE_WORDS
KEYWORDS = TYPE_WORDS | {
    "return",
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "default",
    "break",
    "continue",
    "goto",
    "sizeof",
    "alignof",
    "_Alignof",
    "offsetof",
    "typedef",
    "extern",
    "new",
    "delete",
    "this",
    "true",
    "false",
    "nullptr",
    "NULL",
    "static_cast",
    "reinterpret_cast",
    "const_cast",
    "dynamic_cast",
}
CONSTANT_WORDS = {"sizeof", "alignof", "_Alignof", "offsetof"}
PREFIX_OPS = {
    None,
    "(",
    "[",
    "{",
    ",",
    ";",
    "?",
    ":",
    "=",
    "return",
    "case",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "|",
    "^",
    "!",
    "~",
    "<",
    ">",
    "<=",
    ">=",
    "==",
    "!=",
    "&&",
    "||",
    "<<",
    ">>",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "&=",
    "|=",
    "^=",
    "<<=",
    ">>=",
}


@dataclass(frozen=True)
class Tok:
    kind: str
    """``id``, ``num`` or ``op``."""
    text: str
    pos: int


def clean(text: str) -> str:
    """Comments and string/char literals out (literals become ``0``), lengths kept roughly."""
    text = _BLOCK_COMMENT_RE.sub(lambda m: " " * len(m.group(0)), text)
    text = _LINE_COMMENT_RE.sub("", text)
    return _STRING_RE.sub(lambda m: "0" + " " * (len(m.group(0)) - 1), text)


def tokenize(text: str) -> list[Tok]:
    out = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind:
            out.append(Tok(kind, m.group(0), m.start()))
    return out


def match_bracket(toks: list[Tok], i: int) -> int | None:
    """Index of the bracket closing ``toks[i]`` (``(``, ``[``, ``{``), or None."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    opener, closer, depth = toks[i].text, pairs[toks[i].text], 0
    for j in range(i, len(toks)):
        if toks[j].text == opener:
            depth += 1
        elif toks[j].text == closer:
            depth -= 1
            if depth == 0:
                return j
    return None


def match_back(toks: list[Tok], i: int) -> int | None:
    pairs = {")": "(", "]": "[", "}": "{"}
    closer, opener, depth = toks[i].text, pairs[toks[i].text], 0
    for j in range(i, -1, -1):
        if toks[j].text == closer:
            depth += 1
        elif toks[j].text == opener:
            depth -= 1
            if depth == 0:
                return j
    return None


def split_top(toks: list[Tok], sep: str = ",", angles: bool = False) -> list[list[Tok]]:
    parts: list[list[Tok]] = [[]]
    depth = 0
    for t in toks:
        if t.text in ("(", "[", "{") or (angles and t.text == "<"):
            depth += 1
        elif t.text in (")", "]", "}") or (angles and t.text == ">"):
            depth -= 1
        if t.text == sep and depth == 0:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def is_type_token(t: Tok) -> bool:
    return t.kind == "id" and (t.text in TYPE_WORDS or t.text.endswith("_t"))


def strip_casts(toks: list[Tok]) -> list[Tok]:
    """Drop C casts: ``(uint8_t)x``, ``(const char *)p``, ``(size_t)(a + b)``."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.text == "(":
            j = match_bracket(toks, i)
            inner = toks[i + 1 : j] if j is not None else []
            nxt = toks[j + 1] if j is not None and j + 1 < len(toks) else None
            prev = out[-1] if out else None
            typelike = bool(inner) and all(
                (x.kind == "id" and x.text not in KEYWORDS - TYPE_WORDS)
                or x.text in ("*", "&", "::")
                for x in inner
            )
            starts_operand = nxt is not None and (
                nxt.kind in ("id", "num") or nxt.text in ("(", "~", "!")
            )
            strong = any(is_type_token(x) or x.text in ("*", "&") for x in inner)
            after_callee = prev is not None and (prev.kind == "id" or prev.text in (")", "]"))
            if (
                typelike
                and not after_callee
                and (
                    starts_operand
                    or (strong and nxt is not None and nxt.text in ("*", "&", "-", "+"))
                )
            ):
                i = j + 1  # type: ignore[operator]
                continue
        out.append(t)
        i += 1
    return out


def text_of(toks: list[Tok]) -> str:
    """The tokens as written (any run of whitespace between two of them becomes one space)."""
    out = ""
    for i, t in enumerate(toks):
        if i and t.pos > toks[i - 1].pos + len(toks[i - 1].text):
            out += " "
        out += t.text
    return out


def macro_transparent(text: str, macros: set[str] | frozenset[str]) -> str:
    """Function-like macro invocations become parenthesised argument lists, so that the
    dataflow reads ``PIX_OFFSET(cv, x, y)`` as the values ``cv, x, y`` and not as a call that
    computes something: a macro produces nothing, its arguments do. ``macros``: the names of
    the project's function-like ``#define``s."""
    if not macros:
        return text
    names = "|".join(re.escape(m) for m in sorted(macros, key=len, reverse=True))
    return re.sub(rf"(?<![\w.>])(?:{names})\s*(?=\()", "", text)


def awk_macros(dirs_expr: str) -> str:
    """Shell printing the names of the function-like macros ``#define``d in the C/C++ files
    under ``dirs_expr`` (one per line; at most a few thousand)."""
    return (
        f"grep -rhoE --include='*.[ch]' --include='*.cc' --include='*.cpp' --include='*.hh' "
        f"--include='*.hpp' --include='*.inc' '^[[:space:]]*#[[:space:]]*define[[:space:]]+"
        f"[A-Za-z_][A-Za-z0-9_]*\\(' {dirs_expr} 2>/dev/null | "
        f"sed -E 's/.*define[[:space:]]+//; s/\\($//' | sort -u | head -n 5000"
    )
