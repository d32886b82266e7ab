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
from typing import Literal

from services.green.kinds.arvo.scoring.brace_functions import _heuristic_functions
from services.green.kinds.arvo.scoring.names import name_from_declaration, split_name
from services.green.kinds.arvo.scoring.spans import (
    FunctionSource,
    FunctionSpan,
    Language,
    language_for,
)
from services.green.kinds.arvo.scoring.ts_functions import _tree_sitter_functions

__all__ = [
    "FunctionIndex",
    "FunctionSource",
    "FunctionSpan",
    "Language",
    "language_for",
    "list_functions",
    "name_from_declaration",
    "split_name",
]


def list_functions(source: bytes | str, path: str) -> list[FunctionSpan]:
    """All function definitions tree-sitter finds in a C/C++ file (empty for other files); a
    header that looks like C++ is read with the C++ grammar."""
    lang = language_for(path)
    if lang is None:
        return []
    src = source.encode("utf-8", "surrogateescape") if isinstance(source, str) else source
    if lang == "c" and not path.lower().endswith(".c") and _LOOKS_CPP.search(src):
        lang = "cpp"  # a C++ header named .h (see FunctionIndex._order)
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
