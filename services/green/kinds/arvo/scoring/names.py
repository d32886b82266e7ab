"""Function names from C/C++ declaration text: ``static int ns::Foo::bar(...)`` -> ``bar``.

Used on tree-sitter declarators, brace-scanner headers, hunk headers and the agent's own
``function`` field; macro-made functions (``PHP_FUNCTION(strlen)``) are named by the identifier
inside.
"""

from __future__ import annotations

import re

from services.green.kinds.arvo.scoring.cppnames import (
    QualifiedName,
    Token,
    paren_ends,
    qualified_names,
    tokenize,
)
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
_STORAGE = frozenset({"static", "extern", "inline", "__inline", "__inline__"})
_MACRO_DEF = re.compile(r"^\s*([A-Z_][A-Z0-9_]*)\s*\(\s*([A-Za-z_]\w*)\s*\)\s*$")
_SPACES = re.compile(r"\s+")


def _clean_qualified(text: str) -> str:
    """A scope's name as written (``Box<int>``, ``A :: B``) in the canonical spelling
    (``Box``, ``A::B``); text without a name comes back without its spaces."""
    found = qualified_names(tokenize(text))
    return found[0].qualified if found else _SPACES.sub("", text)


def split_name(qualified: str) -> tuple[str, str]:
    """``ns::Foo::bar`` → (``bar``, ``ns::Foo::bar``); the canonical spelling of
    :mod:`.cppnames`: ``ns::Widget::as<char const*>() const`` → (``as``, ``ns::Widget::as``),
    ``Widget::operator bool() const`` → (``operator bool``, ``Widget::operator bool``)."""
    tokens = tokenize(qualified)
    top = [q for q in qualified_names(tokens) if q.depth == 0]
    called = [
        q
        for q in top
        if q.last + 1 < len(tokens) and tokens[q.last + 1].kind == "(" and q.name not in _NOT_NAMES
    ]
    pick = called[0] if called else (top[-1] if top else None)
    if pick is None:
        q = _clean_qualified(qualified)
        return q, q
    return pick.name, pick.qualified


def _macro_makes_function(macro: str, inner: str) -> bool:
    """``PHP_FUNCTION(strlen)`` defines ``strlen``; ``FT_LOCAL_DEF( FT_Error )`` and
    ``FT_BASE_DEF( void )`` only wrap a return type."""
    return not (
        inner in _NOT_NAMES
        or macro.endswith(("_DEF", "_DECL", "_TYPE"))
        or inner.endswith("_t")
        or re.match(r"^[A-Z][A-Z0-9]*_[A-Z]", inner) is not None
    )


def _is_local_scope(tokens: list[Token], parens: dict[int, int], q: QualifiedName) -> bool:
    """``foo(int)::$_0::operator()`` or ``foo()::Local::f()`` (sanitizer traces): the name is
    followed by its parameters and ``::``: what follows is local to ``foo``."""
    close = parens.get(q.last + 1)
    if close is None:
        return False
    k = close + 1
    while k < len(tokens) and tokens[k].text in ("const", "volatile", "&", "noexcept"):
        k += 1
    return k < len(tokens) and tokens[k].kind == "::"


def name_from_declaration(text: str) -> tuple[str, str] | None:
    """Find the function name in declaration-like text (a hunk header, or what precedes a
    function body): ``static int foo(struct bar *b)`` → (``foo``, ``foo``);
    ``FT_LOCAL_DEF( FT_Error ) tt_face_load( TT_Face face )`` → ``tt_face_load``;
    ``int Foo<T>::bar(int) const`` → (``bar``, ``Foo::bar``); ``PHP_FUNCTION(strlen)`` →
    (``strlen``, ``PHP_FUNCTION(strlen)``). The name is a qualified name followed by ``(``, the
    last of the least nested ones. Returns None when the text declares no function
    (``struct foo {``, ``static const char *names[] = {``)."""
    if not text or not text.strip():
        return None
    tokens = tokenize(text)
    depth, assign = 0, len(tokens)
    for k, t in enumerate(tokens):  # an '=' at depth 0: an initializer, not a declaration
        depth += (t.kind in "([") - (t.kind in ")]")
        if t.kind == "=" and depth == 0:
            assign = k
            break
    candidates = [
        q
        for q in qualified_names(tokens)
        if q.last + 1 < assign
        and tokens[q.last + 1].kind == "("
        and q.name not in _NOT_NAMES
        and q.qualified not in _NOT_NAMES
    ]
    if not candidates:
        return None
    parens = paren_ends(tokens)
    local = next((q for q in candidates if _is_local_scope(tokens, parens, q)), None)
    if local is not None:
        return local.name, local.qualified
    min_depth = min(q.depth for q in candidates)
    shallow = [q for q in candidates if q.depth == min_depth]
    best = shallow[-1]
    # ``FOO(name)`` with nothing but storage classes before it: a macro that makes a function
    # named ``name`` (``void INIT(void)`` is an ordinary function ``INIT``)
    prefix_words = text[: tokens[best.first].start].split()
    if (
        len(shallow) == 1
        and re.fullmatch(r"[A-Z_][A-Z0-9_]*", best.qualified)
        and all(w in _STORAGE for w in prefix_words)
    ):
        inner = re.match(r"\s*\(\s*([A-Za-z_]\w*)\s*\)", text[tokens[best.last].end :])
        if inner and _macro_makes_function(best.qualified, inner.group(1)):
            return inner.group(1), f"{best.qualified}({inner.group(1)})"
        if inner:
            return None
    return best.name, best.qualified


_SEPARATORS = frozenset({",", "/", ";", "|"})
_SEPARATOR_WORDS = frozenset({"or", "and"})


def split_names(text: str) -> list[str]:
    """Several names in one field: ``alpha, gamma``, ``alpha or gamma``, ``a / b`` → one text
    each; commas inside parentheses or template arguments (``Map<K, V>::as``,
    ``f(int, int)``) do not split."""
    tokens = tokenize(text)
    inside: set[int] = set()
    for q in qualified_names(tokens):
        inside.update(range(q.first, q.last + 1))
    pieces: list[str] = []
    depth, begin = 0, 0
    for k, t in enumerate(tokens):
        depth += (t.kind in "([") - (t.kind in ")]")
        if (depth == 0 and k not in inside and t.kind in _SEPARATORS) or (
            depth == 0 and t.kind == "id" and t.text in _SEPARATOR_WORDS
        ):
            pieces.append(text[begin : t.start])
            begin = t.end
    pieces.append(text[begin:])
    return [p.strip() for p in pieces if p.strip()]


def submitted_name(text: str) -> tuple[str, str] | None:
    """One submitted function name in any spelling an agent or a trace uses: ``foo``,
    ``foo()``, ``static int foo(int a)``, ``ns::Foo<T>::bar``, ``operator()``,
    ``Widget::operator bool() const``, ``ns::Widget::as<char const*>() const``,
    ``PHP_FUNCTION(strlen)``."""
    text = text.strip().strip("`'\"").strip()
    if not text:
        return None
    named = name_from_declaration(text)
    if named is not None:
        return named
    tokens = tokenize(text)
    top = [q for q in qualified_names(tokens) if q.depth == 0 and q.name not in _NOT_NAMES]
    if not top:
        return None
    return top[-1].name, top[-1].qualified


def is_macro_form(qualified: str) -> bool:
    """``PHP_FUNCTION(strlen)``: a function made by a macro (its inner name is what counts)."""
    return _MACRO_DEF.match(qualified) is not None
