"""Backward dataflow of an out-of-bounds index, length or pointer along the crash stack.

For a spatial memory error (buffer overflow, UBSan index-out-of-bounds) the crash line shows
*where* memory was accessed, not where the bad value came from. When the index of ``arr[idx]``
(the length of a ``memcpy``, the offset in ``*(p + n)``) is a parameter of the crashing
function, the function merely trusted its caller. This module follows such a value frame by
frame up the stack:

1. at the crash line, find the access expression(s) (the report's column picks one when there
   are several) and the variables of the index/length, or of the pointer when the index is a
   constant;
2. when all of them are parameters the function never reassigns, find the call to the callee on
   the caller frame's line, take the argument at each parameter's position and its variables;
3. repeat until a frame computes the value itself (a local variable, a constant, a struct
   member, a call result): that frame is the *origin*.

The trail goes cold - no origin - when the value is still an untouched parameter of the last
readable project frame (it is the fuzzer's input, passed through unchanged) or when a line
cannot be parsed (macros, calls through unusual syntax). Then the ranking stays as it was.

This is a lexical C heuristic on a few lines of source per frame: no preprocessor, no types. It
is deliberately conservative: any doubt stops the trail.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

# ---- tokens -----------------------------------------------------------------------------------

_TOKEN_RE = re.compile(
    r"\s+|(?P<id>[A-Za-z_]\w*)|(?P<num>\.?\d[\w.]*(?:[eEpP][-+]\d+)?)"
    r"|(?P<op>->\*?|\+\+|--|<<=|>>=|<<|>>|::|&&|\|\||\.\.\.|[-+*/%&|^!=<>]=|[^\s\w])"
)
_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_BLOCK_COMMENT_RE = re.compile(r"/\*.*?(?:\*/|$)", re.S)
_LINE_COMMENT_RE = re.compile(r"//.*$", re.M)
_MACRO_CONST_RE = re.compile(r"^[A-Z_][A-Z0-9_]*$")

_TYPE_WORDS = {
    "void",
    "char",
    "short",
    "int",
    "long",
    "float",
    "double",
    "signed",
    "unsigned",
    "const",
    "volatile",
    "restrict",
    "__restrict",
    "__restrict__",
    "struct",
    "union",
    "enum",
    "bool",
    "_Bool",
    "register",
    "static",
    "inline",
    "auto",
    "typename",
    "class",
}
_KEYWORDS = _TYPE_WORDS | {
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
_CONSTANT_WORDS = {"sizeof", "alignof", "_Alignof", "offsetof"}
_PREFIX_OPS = {
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


def _match(toks: list[Tok], i: int) -> int | None:
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


def _match_back(toks: list[Tok], i: int) -> int | None:
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


def _split_top(toks: list[Tok], sep: str = ",", angles: bool = False) -> list[list[Tok]]:
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


def _is_type_token(t: Tok) -> bool:
    return t.kind == "id" and (t.text in _TYPE_WORDS or t.text.endswith("_t"))


def strip_casts(toks: list[Tok]) -> list[Tok]:
    """Drop C casts: ``(uint8_t)x``, ``(const char *)p``, ``(size_t)(a + b)``."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        if t.text == "(":
            j = _match(toks, i)
            inner = toks[i + 1 : j] if j is not None else []
            nxt = toks[j + 1] if j is not None and j + 1 < len(toks) else None
            prev = out[-1] if out else None
            typelike = bool(inner) and all(
                (x.kind == "id" and x.text not in _KEYWORDS - _TYPE_WORDS)
                or x.text in ("*", "&", "::")
                for x in inner
            )
            starts_operand = nxt is not None and (
                nxt.kind in ("id", "num") or nxt.text in ("(", "~", "!")
            )
            strong = any(_is_type_token(x) or x.text in ("*", "&") for x in inner)
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


def _text(toks: list[Tok]) -> str:
    """The tokens as written (any run of whitespace between two of them becomes one space)."""
    out = ""
    for i, t in enumerate(toks):
        if i and t.pos > toks[i - 1].pos + len(toks[i - 1].text):
            out += " "
        out += t.text
    return out


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
        if t.text in _CONSTANT_WORDS:
            skip_to = _match(toks, i + 1) or len(toks) if nxt == "(" else i + 1
            continue
        if t.text == "this":
            v.computed.append("this->member")
            continue
        if t.text in _KEYWORDS or prev in (".", "->", "::", "->*"):
            continue
        if nxt == "::":
            continue  # a namespace or class qualifier
        if nxt == "(":
            v.computed.append(f"call {t.text}()")
            continue
        if _MACRO_CONST_RE.match(t.text):
            continue
        if nxt in (".", "->"):
            member = toks[i + 2].text if i + 2 < len(toks) else "?"
            v.computed.append(f"member {t.text}{nxt}{member}")
            continue
        if nxt == "[":
            v.computed.append(f"element of {t.text}[]")
            continue
        if prev in ("*", "&") and (i < 2 or toks[i - 2].text in _PREFIX_OPS):
            v.computed.append(f"{prev}{t.text}")
            continue
        v.vars.add(t.text)
    return v


def pointer_parts(toks: list[Tok]) -> tuple[Value, Value]:
    """(offset, base) of a pointer expression: ``p + n`` -> (n, p), ``&a[i]`` -> (i, a),
    ``p`` -> (nothing, p); anything else is all offset."""
    toks = strip_casts(toks)
    while toks and toks[0].text == "(" and _match(toks, 0) == len(toks) - 1:
        toks = strip_casts(toks[1:-1])
    if not toks:
        return Value(), Value()
    if toks[0].text == "&" and len(toks) >= 4 and toks[1].kind == "id" and toks[2].text == "[":
        end = _match(toks, 2)
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
            o = _match_back(toks, k)
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
            e = _match(toks, i)
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
            text = _text(toks[s : e + 1])
            sites.append(Access("subscript", toks[s].pos, toks[e].pos + 1, text, value))
        elif t.text == "*" and (i == 0 or toks[i - 1].text in _PREFIX_OPS) and i + 1 < len(toks):
            nxt = toks[i + 1]
            if nxt.text == "(":
                e = _match(toks, i + 1)
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
            if i and toks[i - 1].kind == "id" and toks[i - 1].text not in _KEYWORDS:
                continue  # a pointer declarator (int *p) or a product
            value = pointer_value(operand)
            text = _text(toks[i : e + 1])
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
    close = _match(toks, i + 1)
    if close is None:
        return None
    inner = toks[i + 2 : close]
    return [] if not inner else _split_top(inner)


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
    text = f"{function}(" + ", ".join(_text(a) for a in args) + ")"
    return Access("call", 0, 0, text, value)


# ---- function signatures and bodies ---------------------------------------------------------


def parse_params(header: str, function: str) -> list[str | None] | None:
    """Parameter names, in order (None for an unnamed one), from the text of a definition
    starting at its header. None when the parameter list cannot be read."""
    toks = tokenize(clean(header))
    name = function.rsplit("::", 1)[-1]
    for i, t in enumerate(toks[:-1]):
        if t.kind == "id" and t.text == name and toks[i + 1].text == "(":
            close = _match(toks, i + 1)
            if close is None:
                return None
            inner = toks[i + 2 : close]
            if not inner or [x.text for x in inner] == ["void"]:
                return []
            return [_param_name(p) for p in _split_top(inner, angles=True)]
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
        o = _match_back(toks, len(toks) - 1)
        toks = toks[:o] if o else []
    ids = [t for t in toks if t.kind == "id"]
    if not ids or toks[-1].kind != "id":
        return None
    if len(ids) == 1:  # an unnamed parameter (int) or a K&R name (a)
        t = ids[0].text
        return None if _is_type_token(ids[0]) or t in _KEYWORDS else t
    return None if ids[-1].text in _KEYWORDS else ids[-1].text


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


# ---- the trail ---------------------------------------------------------------------------------


@dataclass
class FrameCode:
    """What was read of one crash-stack frame."""

    function: str
    file: str
    line: int
    column: int | None
    params: list[str | None] | None
    """None when the signature could not be read."""
    statement: str
    """The frame's line, with the continuation lines after it."""
    body_before: str = ""
    """Body lines before ``line`` that may assign something (for the explanations)."""
    body: str = ""
    """All body lines read (for reassignments of parameters)."""


@dataclass
class Step:
    frame: int
    function: str
    values: list[str]
    """The variables followed at this frame."""
    note: str


@dataclass
class Trail:
    origin: int | None = None
    """Index of the frame that computes the value; None when the trail went cold."""
    steps: list[Step] = field(default_factory=list)
    access: str = ""
    """The access expression at the crash line."""
    why: str = ""
    """One sentence for loc.json."""

    @property
    def moved(self) -> bool:
        return bool(self.origin)


def _q(names: set[str] | list[str]) -> str:
    return ", ".join(sorted(names))


def crash_value(frame: FrameCode, memory_fn: str | None, access: str | None) -> Access | None:
    if memory_fn:
        return memory_call_site(frame.statement, memory_fn, access)
    first_line = frame.statement.split("\n", 1)[0]
    sites = select_sites(access_sites(frame.statement), clean(first_line), frame.column)
    if not sites:
        return None
    value = Value()
    for s in sites:
        value = value.merge(s.value)
    return Access(sites[0].kind, 0, 0, " / ".join(s.text for s in sites), value)


def follow(
    frames: list[FrameCode],
    *,
    memory_fn: str | None = None,
    access: str | None = None,
    more_frames: bool = False,
) -> Trail:
    """Follow the bad value from ``frames[0]`` (the crash) up through its callers.
    ``more_frames``: project frames exist beyond the last one given (not read)."""
    trail = Trail()
    if not frames:
        return trail
    site = crash_value(frames[0], memory_fn, access)
    if site is None:
        trail.why = f"no array, pointer or memory-function access found on the crash line of {frames[0].function}"
        return trail
    trail.access = site.text
    value = site.value
    what = "length/offset" if memory_fn else "index" if site.kind == "subscript" else "pointer"
    k = 0
    path: list[str] = []
    while True:
        fr = frames[k]
        names = set(value.vars)
        if value.computed or value.constant or fr.params is None:
            origin_note = _origin_note(fr, value)
            if fr.params is None and not value.computed and not value.constant:
                trail.steps.append(Step(k, fr.function, sorted(names), "signature not read"))
                trail.why = _cold(trail, path, f"the signature of {fr.function} could not be read")
                return trail
            trail.steps.append(Step(k, fr.function, sorted(names), origin_note))
            trail.origin = k
            break
        params = {p for p in fr.params if p}
        local = names - params
        if local:
            trail.steps.append(
                Step(k, fr.function, sorted(names), _local_note(fr, local, params & names))
            )
            trail.origin = k
            break
        changed = {n: a for n in names if (a := assignments(fr.body, n))}
        if changed:
            n, lines = next(iter(sorted(changed.items())))
            note = f"{n} is a parameter of {fr.function} but is changed there (`{lines[0]}`)"
            trail.steps.append(Step(k, fr.function, sorted(names), note))
            trail.origin = k
            break
        if k + 1 >= len(frames):
            trail.steps.append(Step(k, fr.function, sorted(names), "parameter of the last frame"))
            where = (
                "a caller that was not read"
                if more_frames
                else "the fuzz target (the input, passed through unchanged)"
            )
            trail.why = _cold(trail, path, f"{_q(names)} of {fr.function} comes from {where}")
            return trail
        caller = frames[k + 1]
        args = call_arguments(caller.statement, fr.function, caller.column)
        positions = {n: fr.params.index(n) for n in names}
        if args is None or any(p >= len(args) for p in positions.values()):
            trail.steps.append(Step(k, fr.function, sorted(names), "call not parsed"))
            trail.why = _cold(
                trail,
                path,
                f"the call to {fr.function} on line {caller.line} of {caller.file} could not be parsed",
            )
            return trail
        passed = {n: _text(args[p]) for n, p in sorted(positions.items())}
        trail.steps.append(Step(k, fr.function, sorted(names), "parameter"))
        path.append(
            f"{_q(names)} {'is a parameter' if len(names) == 1 else 'are parameters'} of "
            f"{fr.function}; {caller.function} passes "
            + ", ".join(f"`{a}`" for a in passed.values())
        )
        value = Value()
        for p in positions.values():
            value = value.merge(expr_value(args[p]))
        k += 1
    steps_text = "; ".join(path)
    last = trail.steps[-1].note
    if trail.origin:
        trail.why = (
            f"The {what} of `{trail.access}` in {frames[0].function} comes from up the stack: "
            f"{steps_text}; {last}. The out-of-range value is produced in "
            f"{frames[trail.origin].function} ({frames[trail.origin].file}:"
            f"{frames[trail.origin].line}), which should have checked it."
        )
    else:
        trail.why = f"The {what} of `{trail.access}` is computed in {frames[0].function}: {last}."
    return trail


def _cold(trail: Trail, path: list[str], end: str) -> str:
    steps = "; ".join(path)
    return (
        f"The value at `{trail.access}` was followed up the stack"
        + (f" ({steps})" if steps else "")
        + f", but {end}; the crash site stays first."
    )


def _origin_note(fr: FrameCode, value: Value) -> str:
    if value.constant:
        return f"{fr.function} passes a constant"
    parts = ", ".join(dict.fromkeys(value.computed))
    return f"{fr.function} computes it ({parts})"


def _local_note(fr: FrameCode, local: set[str], params: set[str]) -> str:
    bits = []
    for n in sorted(local):
        found = assignments(fr.body_before, n)
        bits.append(
            f"{n} is local to {fr.function}" + (f" (last set by `{found[-1]}`)" if found else "")
        )
    if params:
        bits.append(f"combined with parameter(s) {_q(params)}")
    return "; ".join(bits)


# ---- reading frames through the environment ---------------------------------------------------


def awk_frame(
    path_expr: str, start: int, line: int, end: int | None, *, before: int = 150, after: int = 40
) -> str:
    """Shell printing ``N: text`` for the lines of the function that starts at ``start`` that
    this module needs: its header (the first lines), the frame's line and the few after it, and
    the lines that may assign something (``=``, ``++``, ``--``, ``&``) from ``before`` lines
    above the frame's line to the function's end (at most ``after`` lines below).
    ``path_expr`` is inserted verbatim; read the output with :func:`.cfunc.parse_numbered`."""
    stop = min(end, line + after) if end is not None and end >= line else line + 6
    head = min(line, start + 12)
    prog = (
        f"NR<{start} {{next}} NR>{stop} {{exit}} "
        f"NR<={head} || (NR>={line} && NR<={line + 6}) || "
        f"(NR>={max(start, line - before)} && /[=&]|[+][+]|--/) "
        '{print NR": "substr($0,1,300)}'
    )
    return f"awk {shlex.quote(prog)} {path_expr}"


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
    )
