"""C fragments for the dataflow: comments and literals out (tree-sitter), tokens, brackets, casts.

The analyst never holds a whole file: it reads fragments that awk printed through green's capped
command output (a frame's header, its line, the lines that assign or check something), so what
it parses are single lines, a statement or a few lines out of a function.

- **tree-sitter** decides what is a comment, a string or a character literal (:func:`clean`), so
  ``"http://x"`` or ``"/*"`` in a string is no comment and a quote in a comment no string; a
  macro's body (one opaque ``preproc_arg`` to tree-sitter) is parsed again on its own. The one
  rule added: a fragment cut inside a block comment is blanked from its ``/*`` to the end (no
  grammar can close a comment whose end was not fetched).
- **kept, written here**: the tokenizer over the cleaned fragment (:func:`tokenize`: words,
  numbers, operators) and the token-list helpers. On fragments, tree-sitter's tokens come from
  its parse state, not from the text alone: measured over every line and 3-line window of the
  bundled fixtures' sources, they differ from the text's tokens in 997 of 9,868 fragments
  (``#include`` and ``<stdio.h>`` as one token, a sign taken into a number, ``-5``), and the
  dataflow reads ``#``, ``-`` and ``include`` as the separate tokens they are. Casts
  (:func:`strip_casts`) need to know which names are types, which a parser without the
  project's typedefs cannot know (tree-sitter reads ``(u8_t)(a + b)`` as a call to ``u8_t``):
  the heuristic below tells them (C type words, ``_t`` names, what follows the parentheses).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_c
import tree_sitter_cpp
from tree_sitter import Language, Node, Parser

from services.shared.c_words import C_TYPE_WORDS

_TOKEN_RE = re.compile(
    r"\s+|(?P<id>[A-Za-z_]\w*)|(?P<num>\.?\d[\w.]*(?:[eEpP][-+]\d+)?)"
    r"|(?P<op>->\*?|\+\+|--|<<=|>>=|<<|>>|::|&&|\|\||\.\.\.|[-+*/%&|^!=<>]=|[^\s\w])"
)
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
    """Comments and string/char literals out (literals become ``0``, block comments spaces,
    line comments nothing), as tree-sitter reads them: a ``"//"`` or ``"/*"`` inside a string
    is no comment, a quote inside a comment opens no string. A block comment the text ends in
    (a fragment cut inside it) is blanked to the end."""
    data = text.encode("utf-8", "surrogateescape")
    out: list[str] = []
    last = 0
    for node in _literals(ts_parser("cpp").parse(data).root_node):
        body = data[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")
        out.append(data[last : node.start_byte].decode("utf-8", "surrogateescape"))
        if node.type == "comment":
            out.append("" if body.startswith("//") else " " * len(body))
        elif node.type == "preproc_arg":  # a macro's body: text to tree-sitter's parse
            out.append(clean(body))
        else:
            out.append("0" + " " * (len(body) - 1))
        last = node.end_byte
    out.append(data[last:].decode("utf-8", "surrogateescape"))
    cleaned = "".join(out)
    cut = cleaned.find("/*")
    return cleaned if cut < 0 else cleaned[:cut] + " " * (len(cleaned) - cut)


_LITERALS = frozenset(
    {"comment", "string_literal", "char_literal", "raw_string_literal", "preproc_arg"}
)


def _literals(root: Node) -> list[Node]:
    """The comment, string/char literal and macro body nodes, in order (not their insides)."""
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type in _LITERALS:
            out.append(node)
        else:
            stack.extend(reversed(node.children))
    return out


@lru_cache(maxsize=2)
def ts_parser(grammar: str) -> Parser:
    """A tree-sitter parser for ``"c"`` or ``"cpp"``."""
    module = tree_sitter_cpp if grammar == "cpp" else tree_sitter_c
    return Parser(Language(module.language()))


def tokenize(text: str) -> list[Tok]:
    out = []
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup
        if kind:
            out.append(Tok(kind, m.group(0), m.start()))
    return out


_PAIRS = {"(": ")", "[": "]", "{": "}", ")": "(", "]": "[", "}": "{"}


def match_bracket(toks: list[Tok], i: int) -> int | None:
    """Index of the bracket closing ``toks[i]`` (``(``, ``[``, ``{``), or None."""
    return _match(toks, i, 1)


def match_back(toks: list[Tok], i: int) -> int | None:
    """Index of the bracket opening ``toks[i]`` (``)``, ``]``, ``}``), or None."""
    return _match(toks, i, -1)


def _match(toks: list[Tok], i: int, step: int) -> int | None:
    here, partner, depth = toks[i].text, _PAIRS[toks[i].text], 0
    for j in range(i, len(toks) if step > 0 else -1, step):
        if toks[j].text == here:
            depth += 1
        elif toks[j].text == partner:
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
