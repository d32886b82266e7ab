"""What a C expression reads and accesses: variables, array/pointer/memory-function accesses,
call arguments, parameters and assignments (lexical, on a few lines of source)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from services.purple.analyst.clex import (
    CONSTANT_WORDS,
    KEYWORDS,
    MACRO_CONST_RE,
    PREFIX_OPS,
    Tok,
    clean,
    is_type_token,
    match_back,
    match_bracket,
    split_top,
    strip_casts,
    text_of,
    tokenize,
)

# ---- values ---------------------------------------------------------------------------------


@dataclass
class Value:
    """The variables an expression reads directly, and whether it also computes (a call, a
    struct member, a load through a pointer or an array)."""

    vars: set[str] = field(default_factory=set)
    computed: list[str] = field(default_factory=list)
    """What was computed, for the explanation: ``call tinf_decode_sym``, ``member s->len``..."""

    def merge(self, other: Value) -> Value:
        return Value(self.vars | other.vars, self.computed + other.computed)

    @property
    def constant(self) -> bool:
        return not self.vars and not self.computed


def expr_value(toks: list[Tok]) -> Value:
    """The variables read by an expression (casts, ``sizeof``, macro constants ignored)."""
    toks = strip_casts(toks)
    v = Value()
    skip_to = -1
    for i, t in enumerate(toks):
        if i <= skip_to or t.kind != "id":
            continue
        prev = toks[i - 1].text if i else None
        nxt = toks[i + 1].text if i + 1 < len(toks) else None
        if t.text in CONSTANT_WORDS:
            skip_to = match_bracket(toks, i + 1) or len(toks) if nxt == "(" else i + 1
            continue
        if t.text == "this":
            v.computed.append("this->member")
            continue
        if t.text in KEYWORDS or prev in (".", "->", "::", "->*"):
            continue
        if nxt == "::":
            continue  # a namespace or class qualifier
        if nxt == "(":
            v.computed.append(f"call {t.text}()")
            continue
        if MACRO_CONST_RE.match(t.text):
            continue
        if nxt in (".", "->"):
            member = toks[i + 2].text if i + 2 < len(toks) else "?"
            v.computed.append(f"member {t.text}{nxt}{member}")
            continue
        if nxt == "[":
            v.computed.append(f"element of {t.text}[]")
            continue
        if prev in ("*", "&") and (i < 2 or toks[i - 2].text in PREFIX_OPS):
            v.computed.append(f"{prev}{t.text}")
            continue
        v.vars.add(t.text)
    return v


def pointer_parts(toks: list[Tok]) -> tuple[Value, Value]:
    """(offset, base) of a pointer expression: ``p + n`` -> (n, p), ``&a[i]`` -> (i, a),
    ``p`` -> (nothing, p); anything else is all offset."""
    toks = strip_casts(toks)
    while toks and toks[0].text == "(" and match_bracket(toks, 0) == len(toks) - 1:
        toks = strip_casts(toks[1:-1])
    if not toks:
        return Value(), Value()
    if toks[0].text == "&" and len(toks) >= 4 and toks[1].kind == "id" and toks[2].text == "[":
        end = match_bracket(toks, 2)
        if end == len(toks) - 1:
            return expr_value(toks[3:end]), expr_value(toks[1:2])
    if toks[0].kind == "id" and len(toks) >= 3 and toks[1].text in ("+", "-"):
        return expr_value(toks[2:]), expr_value(toks[:1])
    if len(toks) == 1:
        return Value(), expr_value(toks)
    return expr_value(toks), Value()


def pointer_value(toks: list[Tok]) -> Value:
    """For a pointer expression, the offset's variables (``p + n`` -> n, ``&a[i]`` -> i) - the
    index-like part - or, when there is no variable offset, the base pointer's."""
    offset, base = pointer_parts(toks)
    return offset if not offset.constant else base


def _index_or_base(index: list[Tok], base: list[Tok]) -> Value:
    v = expr_value(index)
    return v if not v.constant else expr_value(base)


# ---- access sites at the crash line ----------------------------------------------------------


@dataclass
class Access:
    kind: str
    """``subscript``, ``deref``, ``arrow`` or ``call`` (a memory function's arguments)."""
    start: int
    end: int
    text: str
    value: Value


def _postfix_start(toks: list[Tok], k: int) -> int | None:
    """Index of the first token of the postfix expression ending at ``toks[k]``."""
    start = None
    while k >= 0:
        t = toks[k]
        if t.kind == "id":
            start = k
            k -= 1
            if k >= 0 and toks[k].text in (".", "->", "::"):
                k -= 1
                continue
            return start
        if t.text in (")", "]"):
            o = match_back(toks, k)
            if o is None:
                return None
            start, k = o, o - 1
            if t.text == ")" and (k < 0 or toks[k].kind != "id"):
                return start  # a parenthesised expression
            continue
        return start
    return start


def access_sites(statement: str) -> list[Access]:
    """Subscripts, explicit dereferences and ``->`` accesses in a statement."""
    toks = tokenize(clean(statement))
    sites: list[Access] = []
    for i, t in enumerate(toks):
        if t.text == "[" and i and (toks[i - 1].kind == "id" or toks[i - 1].text in (")", "]")):
            s = _postfix_start(toks, i - 1)
            e = match_bracket(toks, i)
            if s is None or e is None:
                continue
            before = toks[s - 1] if s else None
            if before is not None and (
                (before.kind == "id" and before.text not in ("return", "case", "else", "do"))
                or (
                    before.text == "*"
                    and s >= 2
                    and (toks[s - 2].kind == "id" and toks[s - 2].text not in ("return", "case"))
                )
            ):
                continue  # a declarator: char buf[16]; char *names[4]
            index = toks[i + 1 : e]
            value = _index_or_base(index, toks[s:i])
            text = text_of(toks[s : e + 1])
            sites.append(Access("subscript", toks[s].pos, toks[e].pos + 1, text, value))
        elif t.text == "*" and (i == 0 or toks[i - 1].text in PREFIX_OPS) and i + 1 < len(toks):
            nxt = toks[i + 1]
            if nxt.text == "(":
                e = match_bracket(toks, i + 1)
                if e is None:
                    continue
                operand = toks[i + 2 : e]
            elif nxt.kind == "id":
                e = i + 1
                while e + 2 < len(toks) and toks[e + 1].text in (".", "->"):
                    e += 2
                if e + 1 < len(toks) and toks[e + 1].text in ("++", "--"):
                    e += 1
                operand = toks[i + 1 : e + 1]
            else:
                continue
            if i and toks[i - 1].kind == "id" and toks[i - 1].text not in KEYWORDS:
                continue  # a pointer declarator (int *p) or a product
            value = pointer_value(operand)
            text = text_of(toks[i : e + 1])
            sites.append(Access("deref", t.pos, toks[e].pos + 1, text, value))
        elif t.text == "->" and i and toks[i - 1].kind == "id":
            if i >= 2 and toks[i - 2].text in (".", "->"):
                continue
            base = toks[i - 1]
            value = Value() if base.text == "this" else Value({base.text})
            end = toks[i + 1].pos + len(toks[i + 1].text) if i + 1 < len(toks) else t.pos + 2
            sites.append(Access("arrow", base.pos, end, f"{base.text}->", value))
    return sites


def select_sites(sites: list[Access], line_text: str, column: int | None) -> list[Access]:
    """The access(es) the sanitizer points at. Subscripts and dereferences beat ``->``; the
    column (1-based, on the first line of the statement) picks the innermost access under it,
    or the left-hand side of an assignment operator it points at."""
    strong = [s for s in sites if s.kind != "arrow"] or sites
    if column is None or column < 1:
        return strong
    col = column - 1
    under = [s for s in strong if s.start <= col < s.end]
    if under:
        return [min(under, key=lambda s: s.end - s.start)]
    rest = line_text[col:]
    if re.match(r"(?:[-+*/%&|^]|<<|>>)?=(?!=)", rest):
        lhs = [s for s in strong if s.end <= col and not line_text[s.end : col].strip(" )")]
        if lhs:
            return lhs
    return strong


# ---- calls ------------------------------------------------------------------------------------


def call_arguments(
    statement: str, callee: str, column: int | None = None
) -> list[list[Tok]] | None:
    """The argument expressions of the call to ``callee`` in ``statement`` (the occurrence
    nearest the 1-based ``column`` when there are several). A call through a pointer or member
    (``ops->read(...)``) is accepted when it sits exactly at the column. None: not found."""
    toks = tokenize(clean(statement))
    name = callee.rsplit("::", 1)[-1]
    found: list[int] = []
    for i, t in enumerate(toks[:-1]):
        if t.kind == "id" and t.text == name and toks[i + 1].text == "(":
            found.append(i)
    if not found and column:
        col = column - 1
        for i, t in enumerate(toks[:-1]):
            if (
                t.kind == "id"
                and t.pos == col
                and toks[i + 1].text == "("
                and i
                and toks[i - 1].text in ("->", ".")
            ):
                found.append(i)
    if not found:
        return None
    i = min(found, key=lambda k: abs(toks[k].pos - (column - 1))) if column else found[0]
    close = match_bracket(toks, i + 1)
    if close is None:
        return None
    inner = toks[i + 2 : close]
    return [] if not inner else split_top(inner)


# memory and string functions whose arguments say what was accessed:
# name -> (length argument, written pointer, read pointers)
_MEMORY_FUNCTIONS: dict[str, tuple[int | None, int | None, tuple[int, ...]]] = {
    "memcpy": (2, 0, (1,)),
    "memmove": (2, 0, (1,)),
    "mempcpy": (2, 0, (1,)),
    "memccpy": (3, 0, (1,)),
    "memset": (2, 0, ()),
    "memcmp": (2, None, (0, 1)),
    "bcmp": (2, None, (0, 1)),
    "memchr": (2, None, (0,)),
    "memrchr": (2, None, (0,)),
    "strncpy": (2, 0, (1,)),
    "strncat": (2, 0, (1,)),
    "strncmp": (2, None, (0, 1)),
    "strncasecmp": (2, None, (0, 1)),
    "strnlen": (1, None, (0,)),
    "strndup": (1, None, (0,)),
    "strlen": (None, None, (0,)),
    "strcpy": (None, 0, (1,)),
    "strcat": (None, 0, (1,)),
    "strcmp": (None, None, (0, 1)),
    "strcasecmp": (None, None, (0, 1)),
    "strchr": (None, None, (0,)),
    "strrchr": (None, None, (0,)),
    "strstr": (None, None, (0, 1)),
    "strdup": (None, None, (0,)),
    "fwrite": (None, None, (0,)),
    "fread": (None, 0, ()),
    "wmemcpy": (2, 0, (1,)),
    "wcslen": (None, None, (0,)),
}


def memory_function(name: str | None) -> str | None:
    """``__asan_memcpy``/``__interceptor_memcpy``/``__memcpy_chk`` -> ``memcpy``, if known."""
    if not name:
        return None
    n = re.sub(r"^_*(?:asan_|interceptor_|wrap_|real_)?", "", name)
    n = re.sub(r"_chk$", "", n)
    return n if n in _MEMORY_FUNCTIONS else None


def memory_call_site(statement: str, function: str, access: str | None) -> Access | None:
    """The value that sized a memory function's access: the length argument's variables and
    the accessed pointer's offset (``dst + off``); the pointer itself when both are constant."""
    args = call_arguments(statement, function)
    if args is None:
        return None
    length, written, read = _MEMORY_FUNCTIONS[function]
    pointers = [written] if access == "WRITE" else list(read) if access == "READ" else []
    if not pointers:
        pointers = [p for p in (written, *read) if p is not None]
    value, bases = Value(), Value()
    if length is not None and length < len(args):
        value = value.merge(expr_value(args[length]))
    for p in pointers:
        if p is not None and p < len(args):
            offset, base = pointer_parts(args[p])
            value, bases = value.merge(offset), bases.merge(base)
    if value.constant:  # memcpy(dst, src, sizeof x): the pointers themselves
        value = bases
    text = f"{function}(" + ", ".join(text_of(a) for a in args) + ")"
    return Access("call", 0, 0, text, value)


# ---- function signatures and bodies ---------------------------------------------------------


def parse_params(header: str, function: str) -> list[str | None] | None:
    """Parameter names, in order (None for an unnamed one), from the text of a definition
    starting at its header. None when the parameter list cannot be read."""
    toks = tokenize(clean(header))
    name = function.rsplit("::", 1)[-1]
    for i, t in enumerate(toks[:-1]):
        if t.kind == "id" and t.text == name and toks[i + 1].text == "(":
            close = match_bracket(toks, i + 1)
            if close is None:
                return None
            inner = toks[i + 2 : close]
            if not inner or [x.text for x in inner] == ["void"]:
                return []
            return [_param_name(p) for p in split_top(inner, angles=True)]
    return None


def _param_name(toks: list[Tok]) -> str | None:
    for k, t in enumerate(toks):  # a default value: int n = 4
        if t.text == "=":
            toks = toks[:k]
            break
    # function pointer: int (*cb)(int)
    for k in range(len(toks) - 2):
        if toks[k].text == "(" and toks[k + 1].text in ("*", "&") and toks[k + 2].kind == "id":
            return toks[k + 2].text
    while toks and toks[-1].text == "]":  # array: char buf[16]
        o = match_back(toks, len(toks) - 1)
        toks = toks[:o] if o else []
    ids = [t for t in toks if t.kind == "id"]
    if not ids or toks[-1].kind != "id":
        return None
    if len(ids) == 1:  # an unnamed parameter (int) or a K&R name (a)
        t = ids[0].text
        return None if is_type_token(ids[0]) or t in KEYWORDS else t
    return None if ids[-1].text in KEYWORDS else ids[-1].text


def assignments(text: str, name: str) -> list[str]:
    """Statements in ``text`` that may change the variable ``name``: assignments,
    ``++``/``--``, or its address taken (``&name``)."""
    n = re.escape(name)
    pattern = re.compile(
        rf"(?<![\w.>*])\b{n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)"
        rf"|(?<![\w.>])\b{n}\s*(?:\+\+|--)|(?:\+\+|--)\s*\b{n}\b"
        rf"|(?:^|[(,=;]|\breturn)\s*&\s*{n}\b(?!\s*(?:\[|->|\.))"
    )
    return [ln.strip() for ln in clean(text).splitlines() if pattern.search(ln)]
