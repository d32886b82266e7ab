"""One frame of a sanitizer's stack (``#3 0x55d5 in f /src/p/x.c:12:7``), read into a
:class:`Frame`, with its source path normalized (``/work/build/../../src/p/x.c`` is
``/src/p/x.c``: build systems that compile from a build folder print such paths).
"""

from __future__ import annotations

import posixpath
import re
from typing import Literal

from pydantic import BaseModel

_FRAME_RE = re.compile(r"^\s*#(\d+)\s+(0x[0-9a-fA-F]+)?\s*(?:in\s+)?(.*)$")
_BUILDID_RE = re.compile(r"\s*\(BuildId: [0-9a-fA-F]+\)\s*$")
_MODULE_RE = re.compile(r"^(?P<func>.*?)\s*\((?P<module>[^()\s]+?)\+0x[0-9a-fA-F]+\)$")
_LOC_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::(?P<col>\d+))?$")
_SOURCE_SUFFIX = re.compile(r"\.(c|cc|cpp|cxx|h|hh|hpp|inc)$")
_LIBRARY_SUFFIX = re.compile(r"\.so(\.\d+)*$")


class Frame(BaseModel):
    index: int
    pc: str | None = None
    function: str | None = None
    file: str | None = None
    """Normalized: ``/src/<project>/x.c`` (``.`` and ``..`` resolved)."""
    line: int | None = None
    column: int | None = None
    module: str | None = None
    """Binary or library for frames without source info, e.g. ``/out/fuzzer`` or ``libc.so.6``."""
    raw: str = ""

    @property
    def function_name(self) -> str | None:
        """The function without parameter list and template arguments: ``ns::Cls::method``."""
        return short_function_name(self.function)


StackKind = Literal[
    "crash", "freed", "allocated", "origin", "stored", "leak", "stack_object", "thread", "other"
]


class Stack(BaseModel):
    """A stack of a report, labelled by the header before it: ``crash`` (the first, after the
    error line), ``freed`` (``freed by thread``), ``allocated`` (``previously allocated by
    thread``), ``origin`` and ``stored`` (MSan's ``Uninitialized value was created by`` and
    ``... was stored to memory at``), ``leak`` (LeakSanitizer's ``allocated from``),
    ``stack_object`` (``Address ... is located in stack of thread``), ``thread`` (``Thread T1
    created by``), ``other``."""

    kind: StackKind
    header: str = ""
    frames: list[Frame] = []


def normalize_path(path: str) -> str:
    """``/work/build/../../src/p/x.c`` -> ``/src/p/x.c``; ``/src/p/./a//b.c`` -> ``/src/p/a/b.c``.
    A relative path keeps its leading ``..`` (``../csu/libc-start.c``: there is no root to
    resolve it against)."""
    if "/" not in path:
        return path
    return posixpath.normpath(path)


def short_function_name(function: str | None) -> str | None:
    """``ns::Foo<int>::bar(char const*) const`` -> ``ns::Foo::bar``; C names pass unchanged."""
    if not function:
        return None
    anon = "(anonymous namespace)"
    name = function.strip().replace(anon, "\x00")
    # drop the parameter list: the last balanced "(...)" group (and cv/ref qualifiers after it)
    depth, cut = 0, None
    for i in range(len(name) - 1, -1, -1):
        c = name[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                cut = i
                break
    if cut is not None and cut > 0:
        name = name[:cut]
    # drop template arguments
    out, depth = [], 0
    for c in name:
        if c == "<":
            depth += 1
        elif c == ">" and depth:
            depth -= 1
        elif depth == 0:
            out.append(c)
    name = "".join(out).strip()
    # drop a return type that the symbolizer kept ("int foo" -> "foo")
    if " " in name and "operator" not in name:
        name = name.rsplit(" ", 1)[-1]
    return name.replace("\x00", anon) or None


def parse_frame(line: str) -> Frame | None:
    """The frame a stack line describes (escape codes and CR already gone); None for others."""
    m = _FRAME_RE.match(line)
    if not m:
        return None
    frame = Frame(index=int(m.group(1)), pc=m.group(2), raw=line.strip())
    rest = _BUILDID_RE.sub("", m.group(3).strip())
    if mm := _MODULE_RE.match(rest):
        frame.module = mm.group("module")
        frame.function = mm.group("func").strip() or None
        return frame
    head, _, last = rest.rpartition(" ")
    if lm := _LOC_RE.match(last):
        frame.file = normalize_path(lm.group("file"))
        frame.line = int(lm.group("line"))
        frame.column = int(lm.group("col")) if lm.group("col") else None
        frame.function = head.strip() or None
    elif last.startswith("/") or _SOURCE_SUFFIX.search(last):
        frame.file, frame.function = normalize_path(last), head.strip() or None
    elif _LIBRARY_SUFFIX.search(last):
        frame.module, frame.function = last, head.strip() or None
    else:
        frame.function = rest or None
    return frame


def split_src_path(path: str) -> tuple[str | None, str]:
    """``/src/<project>/a/b.c`` -> (project, ``a/b.c``); other paths -> (None, path)."""
    p = path.replace("\\", "/")
    if p.startswith("/src/"):
        parts = p[len("/src/") :].split("/", 1)
        if len(parts) == 2 and parts[1]:
            return parts[0], parts[1]
    return None, p.removeprefix("./")
