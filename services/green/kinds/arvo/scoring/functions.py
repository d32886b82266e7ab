"""Which function encloses a line: tree-sitter first, a brace scanner second, the hunk header last.

- **tree-sitter** (C grammar for ``.c``/``.h``/``.inc``, C++ grammar for C++ files; the other
  grammar is tried when the first finds no function around the lines). Every
  ``function_definition`` node is a function; its name comes from the declarator, however deep it
  is nested (pointer returns, references, parenthesized declarators, function-pointer returns).
  C++ names are qualified with the enclosing namespaces and classes: ``ns::Foo::bar``.
- **brace scanner** (``source="heuristic"``) when tree-sitter found no function around the
  lines, which happens when macros or ``#if`` branches with unbalanced braces derail the parser.
  It masks comments, strings and preprocessor lines, only counts braces of the first branch of an
  ``#if``, and names each top-level ``{...}`` block from the text before it.
- **hunk header** (``@@ ... @@ static int foo(...)``, ``source="hunk-header"``) when the source
  is unavailable, or when neither parser found a function around the lines and the header's
  function is not one the parsers located elsewhere in the file (then the lines really are
  outside any function, e.g. in a global table, and the header would point at the function
  *before* them). A header that ends with ``;`` is a prototype (git's default function-context
  pattern also matches declarations) and names nothing.
"""

from __future__ import annotations

import bisect
import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

FunctionSource = Literal["tree-sitter", "heuristic", "hunk-header"]
Language = Literal["c", "cpp"]

C_EXTENSIONS = frozenset({".c", ".h", ".inc", ".def", ".y", ".l"})
CPP_EXTENSIONS = frozenset(
    {
        ".cc",
        ".cpp",
        ".cxx",
        ".c++",
        ".cp",
        ".hpp",
        ".hh",
        ".hxx",
        ".h++",
        ".ipp",
        ".tcc",
        ".inl",
        ".ixx",
        ".cppm",
        ".txx",
        ".tpp",
        ".mm",
    }
)


class FunctionSpan(BaseModel):
    """A function definition: its unqualified and qualified name and its lines (1-based,
    inclusive; None when only a hunk header named it)."""

    model_config = ConfigDict(frozen=True)

    name: str
    """Unqualified: ``bar``, ``~Foo``, ``operator==``; for macro-made functions such as
    ``PHP_FUNCTION(strlen)`` the identifier inside: ``strlen``."""
    qualified: str
    """``ns::Foo::bar`` for C++ (templates arguments dropped), the macro form
    ``PHP_FUNCTION(strlen)`` for macro-made functions, else equal to ``name``."""
    start_line: int | None = None
    end_line: int | None = None
    source: FunctionSource = "tree-sitter"

    def contains(self, start: int, end: int) -> bool:
        if self.start_line is None or self.end_line is None:
            return False
        return self.start_line <= start and end <= self.end_line


def language_for(path: str) -> Language | None:
    """``"c"``, ``"cpp"`` or None (not a C/C++ file) from the file name."""
    dot = path.rfind(".")
    if dot < 0 or "/" in path[dot:]:
        return None
    ext = path[dot:].lower()
    if ext in C_EXTENSIONS:
        return "c"
    if ext in CPP_EXTENSIONS:
        return "cpp"
    return None


# --- names ----------------------------------------------------------------------------------

_NOT_NAMES = frozenset(
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
        "void",
        "char",
        "short",
        "int",
        "long",
        "float",
        "double",
        "signed",
        "unsigned",
        "bool",
        "_Bool",
        "const",
        "volatile",
        "static",
        "inline",
        "extern",
        "struct",
        "union",
        "enum",
        "class",
        "typename",
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


# --- tree-sitter ----------------------------------------------------------------------------

_NAME_NODES = frozenset(
    {
        "identifier",
        "field_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "template_function",
        "template_method",
        "operator_cast",
    }
)
_WRAPPER_DECLARATORS = frozenset(
    {
        "pointer_declarator",
        "reference_declarator",
        "parenthesized_declarator",
        "attributed_declarator",
        "array_declarator",
    }
)
_SCOPES = {"namespace_definition", "class_specifier", "struct_specifier", "union_specifier"}


@lru_cache(maxsize=2)
def _ts_language(lang: Language):  # pragma: no cover - trivial
    from tree_sitter import Language as TSLanguage

    if lang == "c":
        import tree_sitter_c

        return TSLanguage(tree_sitter_c.language())
    import tree_sitter_cpp

    return TSLanguage(tree_sitter_cpp.language())


def _text(node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _declared_name(fn, src: bytes) -> tuple[str, str] | None:
    """Walk the declarator chain of a ``function_definition`` down to the name."""
    d = fn.child_by_field_name("declarator")
    fallback_ident = None
    for _ in range(64):
        if d is None:
            break
        if d.type == "function_declarator":
            inner = d.child_by_field_name("declarator")
            if inner is None:
                break
            if inner.type in _NAME_NODES:
                return split_name(_text(inner, src))
            d = inner
            continue
        if d.type in _WRAPPER_DECLARATORS:
            nxt = d.child_by_field_name("declarator")
            if nxt is None:
                nxt = next(
                    (
                        c
                        for c in d.named_children
                        if c.type not in ("type_qualifier", "ms_pointer_modifier")
                    ),
                    None,
                )
            if d.type == "parenthesized_declarator" and nxt is not None and nxt.type in _NAME_NODES:
                fallback_ident = nxt
            d = nxt
            continue
        if d.type in _NAME_NODES:
            fallback_ident = d
        break
    if fallback_ident is not None:
        # ``PHP_FUNCTION(strlen) {`` parses as a type ``PHP_FUNCTION`` and declarator ``(strlen)``
        name = _text(fallback_ident, src).strip()
        body = fn.child_by_field_name("body")
        header = src[fn.start_byte : body.start_byte if body else fn.end_byte].decode(
            "utf-8", "replace"
        )
        macro = _MACRO_DEF.match(header.strip())
        if macro and macro.group(2) == name:
            return name, f"{macro.group(1)}({name})"
        return split_name(name)
    return None


def _scope_prefix(node, src: bytes) -> list[str]:
    parts: list[str] = []
    p = node.parent
    while p is not None:
        if p.type in _SCOPES:
            n = p.child_by_field_name("name")
            if n is not None:
                parts.append(_clean_qualified(_text(n, src)))
        p = p.parent
    parts.reverse()
    return parts


def _tree_sitter_functions(src: bytes, lang: Language) -> list[FunctionSpan]:
    from tree_sitter import Parser

    tree = Parser(_ts_language(lang)).parse(src)
    found: list[FunctionSpan] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            named = _declared_name(node, src)
            if named is None:
                body = node.child_by_field_name("body")
                header = src[node.start_byte : body.start_byte if body else node.end_byte]
                named = name_from_declaration(header.decode("utf-8", "replace"))
            if named is not None:
                name, qualified = named
                if lang == "cpp" and "(" not in qualified:
                    scope = _scope_prefix(node, src)
                    if scope:
                        qualified = "::".join([*scope, qualified])
                start = node
                if node.parent is not None and node.parent.type == "template_declaration":
                    start = node.parent
                found.append(
                    FunctionSpan(
                        name=name,
                        qualified=qualified,
                        start_line=start.start_point.row + 1,
                        end_line=node.end_point.row + 1,
                        source="tree-sitter",
                    )
                )
            continue  # no function definitions inside a body worth reporting
        if node.type in _DESCEND:
            stack.extend(reversed(node.children))
    found.sort(key=lambda f: (f.start_line or 0, -(f.end_line or 0)))
    return found


# --- brace scanner --------------------------------------------------------------------------


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
_DESCEND = frozenset(
    {
        "translation_unit",
        "declaration_list",
        "field_declaration_list",
        "template_declaration",
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "linkage_specification",
        "namespace_definition",
        "class_specifier",
        "struct_specifier",
        "union_specifier",
        "ERROR",
        "declaration",
        "field_declaration",
        "type_definition",
        "export_declaration",
    }
)


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


# --- public API -----------------------------------------------------------------------------


def list_functions(source: bytes | str, path: str) -> list[FunctionSpan]:
    """All function definitions tree-sitter finds in a C/C++ file (empty for other files)."""
    lang = language_for(path)
    if lang is None:
        return []
    src = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source
    return _tree_sitter_functions(src, lang)


class _SpanTable:
    """Functions sorted by first line, for O(log n) innermost lookups."""

    def __init__(self, functions: list[FunctionSpan]) -> None:
        spans = sorted(
            (f for f in functions if f.start_line is not None and f.end_line is not None),
            key=lambda f: (f.start_line, -f.end_line),  # type: ignore[operator]
        )
        self.functions = spans
        self.starts = [f.start_line for f in spans]
        self.max_end: list[int] = []
        top = 0
        for f in spans:
            top = max(top, f.end_line)  # type: ignore[arg-type]
            self.max_end.append(top)

    def innermost(self, start: int, end: int) -> FunctionSpan | None:
        best: FunctionSpan | None = None
        i = bisect.bisect_right(self.starts, start) - 1
        while i >= 0 and self.max_end[i] >= end:
            f = self.functions[i]
            if f.contains(start, end) and (
                best is None or (f.end_line - f.start_line) < (best.end_line - best.start_line)  # type: ignore[operator]
            ):
                best = f
            i -= 1
        return best


_LOOKS_CPP = re.compile(
    rb"^\s*(?:namespace\s+\w+|template\s*<|(?:public|private|protected)\s*:|class\s+\w+[^;]*\{)"
    rb"|\bstd::",
    re.MULTILINE,
)


class FunctionIndex:
    """Functions of one source file, parsed once, queried per line range.

    ``source=None`` (file unavailable): only hunk headers can name functions.
    """

    def __init__(self, source: bytes | str | None, path: str) -> None:
        self.path = path
        self.available = source is not None
        self._src: bytes | None = None
        if source is not None:
            self._src = (
                source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source
            )
        self._lang = language_for(path)
        self._cache: dict[Language | str, list[FunctionSpan]] = {}
        self._tables: dict[Language | str, _SpanTable] = {}

    def _table(self, which: Language | Literal["heuristic"]) -> _SpanTable:
        if which not in self._tables:
            self._tables[which] = _SpanTable(self._functions(which))
        return self._tables[which]

    def _functions(self, which: Language | Literal["heuristic"]) -> list[FunctionSpan]:
        if which not in self._cache:
            if self._src is None:
                self._cache[which] = []
            elif which == "heuristic":
                self._cache[which] = _heuristic_functions(self._src.decode("utf-8", "replace"))
            else:
                try:
                    self._cache[which] = _tree_sitter_functions(self._src, which)
                except Exception:  # pragma: no cover - a parser crash must not sink scoring
                    self._cache[which] = []
        return self._cache[which]

    def _order(self) -> list[Language | Literal["heuristic"]]:
        """C++ files: the C++ grammar. ``.c`` files: the C grammar. Other C-family files
        (headers, ``.inc``): C++ alone if the text looks like C++, else C then C++. The C
        grammar is never run on C++ text: it reads ``namespace x {`` as a function ``x``."""
        if self._lang == "cpp":
            return ["cpp", "heuristic"]
        if self.path.lower().endswith(".c"):
            return ["c", "heuristic"]
        if self._src is not None and _LOOKS_CPP.search(self._src):
            return ["cpp", "heuristic"]
        return ["c", "cpp", "heuristic"]

    def known_names(self) -> set[str]:
        names: set[str] = set()
        for which in self._order():
            for f in self._functions(which):
                names.add(f.name)
        return names

    def enclosing(
        self, start: int, end: int | None = None, hunk_header: str | None = None
    ) -> FunctionSpan | None:
        """The function around ``start..end``; see the module docstring for the fallbacks."""
        end = start if end is None else end
        if self._src is not None and self._lang is not None:
            for which in self._order():
                hit = self._table(which).innermost(start, end)
                if hit is not None:
                    return hit
        if hunk_header and not hunk_header.rstrip().endswith(";"):  # a prototype defines nothing
            named = name_from_declaration(hunk_header)
            if named is not None:
                if self._src is not None and named[0] in self.known_names():
                    return None  # the header's function was found elsewhere: lines are outside it
                return FunctionSpan(name=named[0], qualified=named[1], source="hunk-header")
        return None
