"""Function names from C/C++ declaration text: ``static int ns::Foo::bar(...)`` -> ``bar``.

Used on tree-sitter declarators, brace-scanner headers, hunk headers and the agent's own
``function`` field; macro-made functions (``PHP_FUNCTION(strlen)``) are named by the identifier
inside.
"""

from __future__ import annotations

import re

from services.shared.c_words import C_TYPE_WORDS

_NOT_NAMES = C_TYPE_WORDS | frozenset(
    {
        "if",
        "while",
        "for",
        "switch",
        "return",
        "sizeof",
        "alignof",
        "_Alignof",
        "__alignof__",
        "alignas",
        "_Alignas",
        "__attribute__",
        "__attribute",
        "__declspec",
        "decltype",
        "typeof",
        "__typeof__",
        "__typeof",
        "defined",
        "_Static_assert",
        "static_assert",
        "__asm__",
        "asm",
        "__asm",
        "noexcept",
        "throw",
        "catch",
        "do",
        "else",
        "case",
        "extern",
        "template",
        "new",
        "delete",
    }
)
_NAME_BEFORE_PAREN = re.compile(
    r"(?P<name>(?:~?[A-Za-z_$][\w$]*\s*(?:<[^<>()]*>)?\s*::\s*)*"
    r"(?:operator\s*(?:\(\s*\)|\[\s*\]|[^\s\w(]+|\w+)|~?[A-Za-z_$][\w$]*))\s*\("
)
_STORAGE = frozenset({"static", "extern", "inline", "__inline", "__inline__"})
_MACRO_DEF = re.compile(r"^\s*([A-Z_][A-Z0-9_]*)\s*\(\s*([A-Za-z_]\w*)\s*\)\s*$")
_SPACES = re.compile(r"\s+")


def _strip_templates(text: str) -> str:
    """``Foo<T, std::vector<int>>::bar`` → ``Foo::bar`` (but keep ``operator<``)."""
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        if text.startswith("operator", i) and depth == 0:
            out.append(text[i:])
            break
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
        i += 1
    return "".join(out)


def _clean_qualified(text: str) -> str:
    text = _SPACES.sub("", text)
    text = _strip_templates(text)
    return text.lstrip(":")


def split_name(qualified: str) -> tuple[str, str]:
    """``ns::Foo::bar`` → (``bar``, ``ns::Foo::bar``)."""
    q = _clean_qualified(qualified)
    # the last '::' not inside an operator symbol
    head, sep, tail = q.rpartition("::")
    if "operator" in head:
        return q[q.find("operator") :], q
    return (tail if sep else q), q


def _macro_makes_function(macro: str, inner: str) -> bool:
    """``PHP_FUNCTION(strlen)`` defines ``strlen``; ``FT_LOCAL_DEF( FT_Error )`` and
    ``FT_BASE_DEF( void )`` only wrap a return type."""
    return not (
        inner in _NOT_NAMES
        or macro.endswith(("_DEF", "_DECL", "_TYPE"))
        or inner.endswith("_t")
        or re.match(r"^[A-Z][A-Z0-9]*_[A-Z]", inner) is not None
    )


def _paren_depths(text: str) -> list[int]:
    depths = []
    depth = 0
    for ch in text:
        depths.append(depth)
        if ch in "([":
            depth += 1
        elif ch in ")]" and depth:
            depth -= 1
    return depths


def name_from_declaration(text: str) -> tuple[str, str] | None:
    """Find the function name in declaration-like text (a hunk header, or what precedes a
    function body): ``static int foo(struct bar *b)`` → (``foo``, ``foo``);
    ``FT_LOCAL_DEF( FT_Error ) tt_face_load( TT_Face face )`` → ``tt_face_load``;
    ``int Foo<T>::bar(int) const`` → (``bar``, ``Foo::bar``); ``PHP_FUNCTION(strlen)`` →
    (``strlen``, ``PHP_FUNCTION(strlen)``). Returns None when the text declares no function
    (``struct foo {``, ``static const char *names[] = {``)."""
    if not text or not text.strip():
        return None
    text = text.replace("\n", " ")
    macro = _MACRO_DEF.match(text)
    if macro:
        if not _macro_makes_function(macro.group(1), macro.group(2)):
            return None  # ``FT_LOCAL_DEF( int )``: a return-type macro; the name is elsewhere
        return macro.group(2), f"{macro.group(1)}({macro.group(2)})"
    depths = _paren_depths(text)
    candidates: list[tuple[int, int, str]] = []
    for m in _NAME_BEFORE_PAREN.finditer(text):
        raw = m.group("name")
        base = _clean_qualified(raw)
        last = split_name(base)[0]
        if last in _NOT_NAMES or base in _NOT_NAMES:
            continue
        start = m.start("name")
        # an '=' at depth 0 before the name: an initializer, not a declaration
        if any(ch == "=" and depths[i] == 0 for i, ch in enumerate(text[:start])):
            continue
        candidates.append((depths[start], start, base))
    if not candidates:
        return None
    min_depth = min(c[0] for c in candidates)
    shallow = [c for c in candidates if c[0] == min_depth]
    base = shallow[-1][2]
    # ``FOO(name)`` with nothing but storage classes before it: a macro that makes a function
    # named ``name`` (``void INIT(void)`` is an ordinary function ``INIT``)
    prefix_words = text[: shallow[-1][1]].split()
    if (
        len(shallow) == 1
        and re.fullmatch(r"[A-Z_][A-Z0-9_]*", base)
        and all(w in _STORAGE for w in prefix_words)
    ):
        inner = re.match(r"\s*\(\s*([A-Za-z_]\w*)\s*\)", text[shallow[0][1] + len(base) :])
        if inner and _macro_makes_function(base, inner.group(1)):
            return inner.group(1), f"{base}({inner.group(1)})"
        if inner:
            return None
    return split_name(base)
