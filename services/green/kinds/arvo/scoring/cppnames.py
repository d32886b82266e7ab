"""C/C++ names in text: a small tokenizer and the qualified names (``ns::Foo<T>::bar``,
``operator()``, ``operator bool``, ``~Foo``) it finds, in one canonical spelling.

The canonical spelling (what green stores and compares) has no spaces except inside an operator
name, no template arguments (``Map<K, V>::as<const char*>`` -> ``Map::as``), no leading ``::``
and no ``(anonymous namespace)`` scopes; operators are ``operator()``, ``operator[]``,
``operator==``, ``operator new[]``, ``operator bool``, ``operator const char*``.
:mod:`.names` builds declarations and submitted names on top of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ANON = re.compile(r"\(\s*anonymous\s+namespace\s*\)\s*::|`anonymous namespace'::")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_OP_SYMBOL = re.compile(
    r"\(\s*\)|\[\s*\]|(?:new|delete)\b(?:\s*\[\s*\])?|co_await\b|\"\"\s*[A-Za-z_]\w*"
    r"|->\*|<=>|<<=|>>=|->|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%^&|!=<>]=|[-+*/%^&|~!=<>,]"
)
_CONVERSION_STOP = frozenset("(),;{}=")
_BREAK = frozenset({";", "{", "}"})


@dataclass(frozen=True)
class Token:
    kind: str
    """``id`` (identifier), ``op`` (a whole operator name), ``::`` or a punctuation character."""
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class QualifiedName:
    """A qualified name found in text: its components (canonical) and where it is."""

    parts: tuple[str, ...]
    first: int
    """Index of its first token."""
    last: int
    """Index of its last token (template arguments included)."""
    depth: int
    """Parenthesis/bracket depth where it starts."""

    @property
    def name(self) -> str:
        return self.parts[-1]

    @property
    def qualified(self) -> str:
        return "::".join(self.parts)


def _conversion_type(text: str, i: int) -> tuple[str, int]:
    """The type of ``operator <type>`` from ``i``: canonical text and the end offset."""
    words: list[str] = []
    depth = 0
    j = i
    while j < len(text):
        ch = text[j]
        if ch.isspace():
            j += 1
            continue
        if depth == 0 and ch in _CONVERSION_STOP:
            break
        m = _IDENT.match(text, j)
        if m:
            if words and (words[-1][-1:].isalnum() or words[-1][-1:] in "_$>"):
                words.append(" ")
            words.append(m.group())
            j = m.end()
            continue
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                break
            depth -= 1
        words.append(ch)
        j += 1
    return "".join(words).replace(" ::", "::"), j


def tokenize(text: str) -> list[Token]:
    """Identifiers, whole operator names, ``::`` and single punctuation characters."""
    text = _ANON.sub("", text)
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        m = _IDENT.match(text, i)
        if m:
            word = m.group()
            if word == "operator":
                j = m.end()
                while j < n and text[j].isspace():
                    j += 1
                sym = _OP_SYMBOL.match(text, j)
                if sym:
                    op = re.sub(r"\s+", "", sym.group())
                    word_op = re.match(r"new|delete|co_await", op)
                    if word_op:  # ``operator new[]``, ``operator delete``, ``operator co_await``
                        op = " " + word_op.group() + ("[]" if "[" in op else "")
                    out.append(Token("op", "operator" + op, i, sym.end()))
                    i = sym.end()
                    continue
                conv, end = _conversion_type(text, j)
                if conv:
                    out.append(Token("op", "operator " + conv, i, end))
                    i = end
                    continue
            out.append(Token("id", word, i, m.end()))
            i = m.end()
            continue
        if text.startswith("::", i):
            out.append(Token("::", "::", i, i + 2))
            i += 2
            continue
        out.append(Token(ch, ch, i, i + 1))
        i += 1
    return out


def template_ends(tokens: list[Token]) -> dict[int, int]:
    """Index of each ``<`` that opens a template argument list -> index of its ``>``, in one
    pass. A ``<`` is no argument list when a ``;``, brace or ``=`` at its level, or the ``)``
    closing its parentheses, comes first (``i < n; i++``)."""
    ends: dict[int, int] = {}
    levels: list[list[int]] = [[]]  # open '<' per parenthesis level
    for k, tok in enumerate(tokens):
        t = tok.kind
        if t in _BREAK:
            levels = [[] for _ in levels]
        elif t == "=":
            levels[-1] = []
        elif t in "([":
            levels.append([])
        elif t in ")]":
            if len(levels) > 1:
                levels.pop()
            levels[-1] = []  # a '<' before the parenthesis cannot close after it
        elif t == "<":
            levels[-1].append(k)
        elif t == ">" and levels[-1]:
            ends[levels[-1].pop()] = k
    return ends


def paren_ends(tokens: list[Token]) -> dict[int, int]:
    """Index of each ``(`` -> index of its ``)``, in one pass."""
    ends: dict[int, int] = {}
    stack: list[int] = []
    for k, tok in enumerate(tokens):
        if tok.kind == "(":
            stack.append(k)
        elif tok.kind == ")" and stack:
            ends[stack.pop()] = k
    return ends


def _component(tokens: list[Token], i: int, angles: dict[int, int]) -> tuple[str, int] | None:
    """A name component at ``tokens[i]`` (``id``, ``~id``, an operator): (text, next index
    after its template arguments)."""
    t = tokens[i]
    if t.kind == "op":
        return t.text, i + 1
    if t.kind == "~" and i + 1 < len(tokens) and tokens[i + 1].kind == "id":
        return "~" + tokens[i + 1].text, i + 2
    if t.kind != "id":
        return None
    j = i + 1
    if j in angles:
        j = angles[j] + 1
    return t.text, j


def qualified_names(tokens: list[Token]) -> list[QualifiedName]:
    """Every maximal qualified name in the token list, left to right."""
    found: list[QualifiedName] = []
    angles = template_ends(tokens)
    depth = 0
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.kind in "([":
            depth += 1
            i += 1
            continue
        if t.kind in ")]":
            depth = max(0, depth - 1)
            i += 1
            continue
        start = i
        if t.kind == "::":
            i += 1
        comp = _component(tokens, i, angles) if i < len(tokens) else None
        if comp is None:
            i = start + 1
            continue
        parts = [comp[0]]
        i = comp[1]
        while (
            not parts[-1].startswith("operator")
            and i + 1 < len(tokens)
            and tokens[i].kind == "::"
            and (nxt := _component(tokens, i + 1, angles)) is not None
        ):
            parts.append(nxt[0])
            i = nxt[1]
        found.append(QualifiedName(tuple(parts), start, i - 1, depth))
    return found


def split_parts(qualified: str) -> list[str]:
    """``ns::Foo::operator std::string`` -> [``ns``, ``Foo``, ``operator std::string``]."""
    parts: list[str] = []
    rest = qualified
    while rest:
        if rest.startswith("operator") and not _IDENT.fullmatch(rest.split("::", 1)[0]):
            parts.append(rest)
            break
        head, sep, rest = rest.partition("::")
        if head:
            parts.append(head)
        if not sep:
            break
    return parts
