"""Read a sanitizer report (ASan, MSan, UBSan, LeakSanitizer, libFuzzer) into a
:class:`SanitizerReport`.

Accepts bytes (non-UTF-8 tolerated) or text, as a terminal printed it (colour codes, CRLF:
:mod:`.terminal`) and with any amount of noise before the report. The first report in the text
is read; a crash may be followed by a leak report or a second UBSan error: those are kept in
:attr:`SanitizerReport.extra_errors` as lines only. Both forms of the process header are read
(``==7==ERROR:`` and ``==7:7==ERROR:``), and libFuzzer's own (``==7== ERROR: libFuzzer: deadly
signal``, ``timeout after 25 seconds``, ``out-of-memory (malloc(...))``).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

from services.shared.sanitizer.bug_classes import error_class, summary_class, ub_class
from services.shared.sanitizer.frames import (
    Stack,
    StackKind,
    normalize_path,
    parse_frame,
)
from services.shared.sanitizer.terminal import plain


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
    use-of-uninitialized-value, memory-leak, signed-integer-overflow, timeout, ... (see
    :mod:`.bug_classes`)."""
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
    fuzz_target: str | None = None
    """The fuzz target libFuzzer ran (``/out/xml_fuzzer: Running 1 inputs``): ``xml_fuzzer``."""

    def stack(self, kind: StackKind) -> Stack | None:
        return next((s for s in self.stacks if s.kind == kind), None)

    @property
    def crash_stack(self) -> Stack | None:
        return self.stack("crash")

    @property
    def site_stack(self) -> Stack | None:
        """Where the report points: the crash stack, or a leak report's first allocation stack."""
        return self.crash_stack or self.stack("leak")

    @property
    def bug_class(self) -> str:
        """:attr:`crash_type`, ``unknown`` when the text holds no report."""
        return self.crash_type or "unknown"

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


_PID = r"==\d+(?::\d+)?==\s*"
_ERROR_RE = re.compile(rf"{_PID}(?:ERROR|WARNING): (\w+): ?(.*)$")
_UB_RE = re.compile(r"^(?P<file>\S+?):(?P<line>\d+):(?:(?P<col>\d+):)? runtime error: (?P<msg>.*)$")
_UB_NOLOC_RE = re.compile(r"^(?:<unknown>|\S*): runtime error: (?P<msg>.*)$")
_SUMMARY_RE = re.compile(r"^SUMMARY: (\w+): (.*)$")
_ANY_REPORT_RE = re.compile(
    rf"{_PID}(?:ERROR|WARNING): \w+Sanitizer\b|^SUMMARY: \w*Sanitizer|runtime error: ", re.M
)
_FUZZ_TARGET_RE = re.compile(r"^/out/(?:[^\s:]+/)?([^\s:/]+): Running \d+ inputs", re.M)
_ACCESS_RE = re.compile(r"^(READ|WRITE) of size (\d+) at (0x[0-9a-fA-F]+)")
_SIGNAL_ACCESS_RE = re.compile(r"The signal is caused by a (READ|WRITE) memory access")
_ADDRESS_RE = re.compile(r"on (?:unknown )?address (0x[0-9a-fA-F]+)")
_REGION_RE = re.compile(r"is located (.*? region)")
_STACK_VAR_RE = re.compile(r"\[\d+, \d+\) '([^']+)'(?: \(line (\d+)\))? <== Memory access")
_GLOBAL_RE = re.compile(r"global variable '([^']+)' defined in '([^':]+):(\d+)(?::(\d+))?'")
_LEAK_RE = re.compile(r"^(Direct|Indirect) leak of \d+ byte")
_THREAD_RE = re.compile(r"^Thread T\d+ .*created by")
_SUMMARY_LOC_RE = re.compile(
    r"^(?P<type>[\w-]+) (?P<loc>\S+?):(?P<line>\d+)(?::(?P<col>\d+))?(?:\s+in\b\s*(?P<func>.*))?$"
)


def has_report(data: bytes | str) -> bool:
    """True when ``data`` holds a sanitizer's report (LeakSanitizer, MSan's ``WARNING:`` and
    UBSan's ``runtime error:`` included). libFuzzer's own reports (deadly signal, timeout,
    out-of-memory) are read by :func:`parse_report` but are no sanitizer report here: the judges
    count a crash with this, and any input can make a target hang or exhaust its memory."""
    return bool(_ANY_REPORT_RE.search(plain(data)))


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
    if _THREAD_RE.match(h):
        return "thread"
    return "other" if have_crash else "crash"


def _is_error_line(line: str) -> bool:
    return bool(_ERROR_RE.search(line)) or " runtime error: " in line


def parse_report(data: bytes | str) -> SanitizerReport:
    """Read the first sanitizer report in ``data``; an empty report if there is none."""
    text = plain(data)
    lines = text.split("\n")
    target = _FUZZ_TARGET_RE.search(text)
    report = SanitizerReport(fuzz_target=target.group(1) if target else None)
    start = next((i for i, line in enumerate(lines) if _is_error_line(line)), None)
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
            report.error_line = header = s
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
        _read_detail(report, s)
        header = s
    return report


def _read_detail(report: SanitizerReport, s: str) -> None:
    """What a line between the error line and the SUMMARY says about the access."""
    if m := _ACCESS_RE.match(s):
        report.access, report.access_size, report.address = (
            m.group(1),  # type: ignore[assignment]
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
            file=normalize_path(m.group(2)),
            line=int(m.group(3)),
            column=int(m.group(4)) if m.group(4) else None,
            function=m.group(1),
        )


def _read_error_line(report: SanitizerReport, sanitizer: str, rest: str) -> None:
    report.sanitizer = sanitizer
    if m := _ADDRESS_RE.search(rest):
        report.address = m.group(1)
    report.crash_type = error_class(sanitizer, rest)


def _read_ub_line(report: SanitizerReport, line: str) -> None:
    report.sanitizer = "UndefinedBehaviorSanitizer"
    if m := _UB_RE.match(line):
        report.ub_message = m.group("msg")
        report.ub_location = SourceLocation(
            file=normalize_path(m.group("file")),
            line=int(m.group("line")),
            column=int(m.group("col")) if m.group("col") else None,
        )
    elif m := _UB_NOLOC_RE.match(line):
        report.ub_message = m.group("msg")
    report.crash_type = ub_class(report.ub_message or "")


def _read_summary(report: SanitizerReport, sanitizer: str, rest: str) -> None:
    report.sanitizer = report.sanitizer or sanitizer
    m = _SUMMARY_LOC_RE.match(rest.strip())
    if m:
        report.summary_location = SourceLocation(
            file=normalize_path(m.group("loc")),
            line=int(m.group("line")),
            column=int(m.group("col")) if m.group("col") else None,
            function=(m.group("func") or "").strip() or None,
        )
    report.crash_type = summary_class(sanitizer, rest) or report.crash_type
