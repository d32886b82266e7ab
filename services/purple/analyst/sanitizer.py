"""Parse a sanitizer report (ASan, MSan, UBSan, LeakSanitizer, libFuzzer) into typed data.

Accepts bytes (non-UTF-8 tolerated) or text, with any amount of noise before the report. The
first report in the text is parsed (a crash may be followed by a leak report or a second UBSan
error; those are kept in :attr:`SanitizerReport.extra_errors` as lines only).

Stacks are labelled by the header line before them: the crash stack, ``freed by thread ...
here:``, ``previously allocated by thread ... here:``, MSan's ``Uninitialized value was created
by ...`` and ``... stored to memory at:``, leak ``allocated from:`` stacks, the frame of a stack
object, and thread-creation stacks.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

StackKind = Literal[
    "crash", "freed", "allocated", "origin", "stored", "leak", "stack_object", "thread", "other"
]


class Frame(BaseModel):
    index: int
    pc: str | None = None
    function: str | None = None
    file: str | None = None
    line: int | None = None
    column: int | None = None
    module: str | None = None
    """Binary or library for frames without source info, e.g. ``/out/fuzzer`` or ``libc.so.6``."""
    raw: str = ""

    @property
    def function_name(self) -> str | None:
        """The function without parameter list and template arguments: ``ns::Cls::method``."""
        return short_function_name(self.function)


class Stack(BaseModel):
    kind: StackKind
    header: str = ""
    frames: list[Frame] = []


class SourceLocation(BaseModel):
    file: str
    line: int | None = None
    column: int | None = None
    function: str | None = None


class SanitizerReport(BaseModel):
    sanitizer: str | None = None
    """AddressSanitizer, MemorySanitizer, UndefinedBehaviorSanitizer, LeakSanitizer, libFuzzer..."""
    crash_type: str | None = None
    """heap-buffer-overflow, heap-use-after-free, double-free, SEGV, stack-overflow,
    use-of-uninitialized-value, memory-leak, signed-integer-overflow, ..."""
    error_line: str = ""
    access: Literal["READ", "WRITE"] | None = None
    access_size: int | None = None
    address: str | None = None
    region: str | None = None
    """E.g. ``0 bytes after 24-byte region``."""
    ub_message: str | None = None
    """The text after ``runtime error:`` (UBSan)."""
    ub_location: SourceLocation | None = None
    """``file:line:col`` of the UBSan ``runtime error:`` line."""
    stack_variable: tuple[str, int | None] | None = None
    """(name, declaration line) of the overflowed stack object, when ASan names it."""
    global_variable: SourceLocation | None = None
    """Where the overflowed global is defined, when ASan says so."""
    summary: str | None = None
    summary_location: SourceLocation | None = None
    stacks: list[Stack] = []
    extra_errors: list[str] = []

    def stack(self, kind: StackKind) -> Stack | None:
        return next((s for s in self.stacks if s.kind == kind), None)

    @property
    def crash_stack(self) -> Stack | None:
        return self.stack("crash")

    @property
    def is_lifetime_bug(self) -> bool:
        t = (self.crash_type or "").lower()
        return (
            "use-after-free" in t
            or "double-free" in t
            or "use-after-return" in t
            or t == "bad-free"
        )

    @property
    def is_overflow(self) -> bool:
        t = (self.crash_type or "").lower()
        return (
            ("overflow" in t or "underflow" in t) and "integer" not in t and t != "stack-overflow"
        )


# ---- regexes ---------------------------------------------------------------------------------

_PID = r"==\d+==\s*"
_ERROR_RE = re.compile(rf"{_PID}(?:ERROR|WARNING): (\w+): ?(.*)$")
_LIBFUZZER_RE = re.compile(r"^==\d+==\s*ERROR: libFuzzer: (.*)$")
_UB_RE = re.compile(r"^(?P<file>\S+?):(?P<line>\d+):(?:(?P<col>\d+):)? runtime error: (?P<msg>.*)$")
_UB_NOLOC_RE = re.compile(r"^(?:<unknown>|\S*): runtime error: (?P<msg>.*)$")
_SUMMARY_RE = re.compile(r"^SUMMARY: (\w+): (.*)$")
_FRAME_RE = re.compile(r"^\s*#(\d+)\s+(0x[0-9a-fA-F]+)?\s*(?:in\s+)?(.*)$")
_BUILDID_RE = re.compile(r"\s*\(BuildId: [0-9a-fA-F]+\)\s*$")
_MODULE_RE = re.compile(r"^(?P<func>.*?)\s*\((?P<module>[^()\s]+?)\+0x[0-9a-fA-F]+\)$")
_LOC_RE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::(?P<col>\d+))?$")
_ACCESS_RE = re.compile(r"^(READ|WRITE) of size (\d+) at (0x[0-9a-fA-F]+)")
_SIGNAL_ACCESS_RE = re.compile(r"The signal is caused by a (READ|WRITE) memory access")
_ADDRESS_RE = re.compile(r"on (?:unknown )?address (0x[0-9a-fA-F]+)")
_REGION_RE = re.compile(r"is located (.*? region)")
_STACK_VAR_RE = re.compile(r"\[\d+, \d+\) '([^']+)'(?: \(line (\d+)\))? <== Memory access")
_GLOBAL_RE = re.compile(r"global variable '([^']+)' defined in '([^':]+):(\d+)(?::(\d+))?'")
_LEAK_RE = re.compile(r"^(Direct|Indirect) leak of \d+ byte")
_SUMMARY_LOC_RE = re.compile(
    r"^(?P<type>[\w-]+) (?P<loc>\S+?):(?P<line>\d+)(?::(?P<col>\d+))?(?:\s+in\b\s*(?P<func>.*))?$"
)

_UB_TYPES = [
    ("signed integer overflow", "signed-integer-overflow"),
    ("unsigned integer overflow", "unsigned-integer-overflow"),
    ("out of bounds for type", "index-out-of-bounds"),
    ("shift exponent", "shift-exponent"),
    ("left shift of", "shift-base"),
    ("division by zero", "integer-divide-by-zero"),
    ("null pointer", "null-pointer-use"),
    ("misaligned address", "misaligned-pointer-use"),
    ("is not a valid value for type", "invalid-value-load"),
    ("pointer overflow", "pointer-overflow"),
    ("applying non-zero offset", "pointer-overflow"),
    ("applying zero offset to null pointer", "pointer-overflow"),
    ("outside the range of representable values", "float-cast-overflow"),
    ("implicit conversion", "implicit-conversion"),
    ("indirect function call through", "function-type-mismatch"),
    ("call to function", "function-type-mismatch"),
    ("execution reached an unreachable program point", "unreachable"),
    ("reached the end of a value-returning function", "missing-return"),
    ("variable length array bound", "vla-bound-not-positive"),
    ("returns a nonnull", "nonnull-return"),
    ("null pointer passed as argument", "nonnull-attribute"),
]


def _decode(data: bytes | str) -> str:
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


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
        frame.file = lm.group("file")
        frame.line = int(lm.group("line"))
        frame.column = int(lm.group("col")) if lm.group("col") else None
        frame.function = head.strip() or None
    elif last.startswith("/") or re.search(r"\.(c|cc|cpp|cxx|h|hh|hpp|inc)$", last):
        frame.file, frame.function = last, head.strip() or None
    elif re.search(r"\.so(\.\d+)*$", last):
        frame.module, frame.function = last, head.strip() or None
    else:
        frame.function = rest or None
    return frame


def _stack_kind(header: str, have_crash: bool) -> StackKind:
    h = header.strip()
    if h.startswith("freed by thread"):
        return "freed"
    if "allocated by thread" in h:
        return "allocated"
    if h.startswith("Uninitialized value was created"):
        return "origin"
    if h.startswith("Uninitialized value was stored"):
        return "stored"
    if _LEAK_RE.match(h):
        return "leak"
    if "is located in stack of thread" in h:
        return "stack_object"
    if re.match(r"^Thread T\d+ .*created by", h):
        return "thread"
    return "other" if have_crash else "crash"


def _report_start(lines: list[str]) -> int | None:
    for i, line in enumerate(lines):
        if _ERROR_RE.search(line) or " runtime error: " in line or _LIBFUZZER_RE.match(line):
            return i
    return None


def parse_report(data: bytes | str) -> SanitizerReport:
    """Parse the first sanitizer report in ``data``; an empty report if there is none."""
    text = _decode(data)
    lines = text.splitlines()
    report = SanitizerReport()
    start = _report_start(lines)
    if start is None:
        return report
    header = ""
    current: Stack | None = None
    ended = False
    for line in lines[start:]:
        s = line.strip()
        if s.startswith("#") and (frame := parse_frame(s)) is not None:
            if ended:
                continue
            if current is None:
                current = Stack(
                    kind=_stack_kind(header, report.crash_stack is not None), header=header
                )
                report.stacks.append(current)
            current.frames.append(frame)
            continue
        current = None
        if not s:
            continue
        m = _ERROR_RE.search(s)
        if m or _UB_RE.match(s) or _UB_NOLOC_RE.match(s):
            if report.error_line:
                if len(report.extra_errors) < 20:
                    report.extra_errors.append(s[:500])
                ended = True
                continue
            report.error_line = s
            header = s
            if m:
                _read_error_line(report, m.group(1), m.group(2))
            else:
                _read_ub_line(report, s)
            continue
        if ended:
            continue
        if m := _SUMMARY_RE.match(s):
            report.summary = s
            _read_summary(report, m.group(1), m.group(2))
            ended = True
            continue
        if m := _ACCESS_RE.match(s):
            report.access, report.access_size, report.address = (
                m.group(1),
                int(m.group(2)),
                m.group(3),
            )
        elif m := _SIGNAL_ACCESS_RE.search(s):
            report.access = m.group(1)  # type: ignore[assignment]
        if (m := _REGION_RE.search(s)) and report.region is None:
            report.region = m.group(1)
        if m := _STACK_VAR_RE.search(s):
            report.stack_variable = (m.group(1), int(m.group(2)) if m.group(2) else None)
        if m := _GLOBAL_RE.search(s):
            report.global_variable = SourceLocation(
                file=m.group(2),
                line=int(m.group(3)),
                column=int(m.group(4)) if m.group(4) else None,
                function=m.group(1),
            )
        header = s
    return report


def _read_error_line(report: SanitizerReport, sanitizer: str, rest: str) -> None:
    report.sanitizer = sanitizer
    rest = rest.strip()
    if m := _ADDRESS_RE.search(rest):
        report.address = m.group(1)
    if sanitizer == "libFuzzer":
        kind = rest.split("(")[0].split(" after ")[0].strip()
        report.crash_type = kind.replace(" ", "-") or None
    elif sanitizer == "LeakSanitizer" or rest.startswith("detected memory leaks"):
        report.crash_type = "memory-leak"
    elif rest.startswith("attempting double-free"):
        report.crash_type = "double-free"
    elif rest.startswith("attempting free on address which was not malloc"):
        report.crash_type = "bad-free"
    else:
        report.crash_type = rest.split(" ")[0].rstrip(":") if rest else None


def _ub_type(message: str) -> str:
    for needle, name in _UB_TYPES:
        if needle in message:
            return name
    return message.split(":")[0][:60].strip() or "undefined-behavior"


def _read_ub_line(report: SanitizerReport, line: str) -> None:
    report.sanitizer = "UndefinedBehaviorSanitizer"
    if m := _UB_RE.match(line):
        report.ub_message = m.group("msg")
        report.ub_location = SourceLocation(
            file=m.group("file"),
            line=int(m.group("line")),
            column=int(m.group("col")) if m.group("col") else None,
        )
    elif m := _UB_NOLOC_RE.match(line):
        report.ub_message = m.group("msg")
    report.crash_type = _ub_type(report.ub_message or "")


def _read_summary(report: SanitizerReport, sanitizer: str, rest: str) -> None:
    report.sanitizer = report.sanitizer or sanitizer
    m = _SUMMARY_LOC_RE.match(rest.strip())
    if m:
        report.summary_location = SourceLocation(
            file=m.group("loc"),
            line=int(m.group("line")),
            column=int(m.group("col")) if m.group("col") else None,
            function=(m.group("func") or "").strip() or None,
        )
    first = rest.split(" ")[0].rstrip(":")
    # the SUMMARY names the bug type more reliably than some ERROR lines ("requested allocation
    # size ..." -> allocation-size-too-big); UBSan's summary only says "undefined-behavior"
    if sanitizer not in ("UndefinedBehaviorSanitizer", "libFuzzer") and re.fullmatch(
        r"[a-z]+(?:-[a-z]+)+|SEGV|[A-Z]{3,4}", first
    ):
        report.crash_type = first
