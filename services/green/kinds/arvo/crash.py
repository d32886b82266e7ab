"""What green reads from a sanitizer report, on top of the one shared reader
(:mod:`services.shared.sanitizer`): the crash signature two runs of a task compare on, the
crash site (the floor's answer), and where a fix lies relative to the report's stacks.

Its users: the fixture builder checks the crash each bundled task produces (``fixtures/``); the
dataset tools compare the signature of ``error.txt`` with the crash the task image produces
(``green/kinds/arvo/datasets/verify.py``); the dashboard shows and groups tasks by bug class
and fix position (``green/ui/``); the floors (:mod:`.floors`). The judge never reads a report.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.shared.sanitizer import Frame, SanitizerReport, has_report, parse_report
from services.shared.sanitizer.frame_roles import crash_site, is_runtime_frame, is_system_frame

__all__ = [
    "FIX_POSITIONS",
    "CrashSignature",
    "crash_frames",
    "fix_position",
    "fuzz_target",
    "has_report",
    "mismatch",
    "parse_report",
    "parse_signature",
    "report_start",
    "signature",
    "source_frames",
    "where",
]


@dataclass(frozen=True)
class CrashSignature:
    tool: str
    """AddressSanitizer, MemorySanitizer, UndefinedBehaviorSanitizer, LeakSanitizer, ..."""
    crash_type: str
    """heap-buffer-overflow, double-free, SEGV, index-out-of-bounds, ..."""
    frame: Frame | None
    """The crash site under the project's source folder (:func:`crash_site`; None: none)."""
    summary_function: str = ""
    """The function the SUMMARY line names (``... in __interceptor_free``); empty if none."""

    @property
    def sanitizer_class(self) -> str:
        return f"{self.tool}: {self.crash_type}"

    def describe(self) -> str:
        where = f"{self.frame.function} at {self.frame.file}" if self.frame else "no project frame"
        return f"{self.sanitizer_class}, {where}"


def signature(report: SanitizerReport, project: str | None) -> CrashSignature | None:
    """The signature of a read report; None when the text held no report."""
    if report.sanitizer is None:
        return None
    where = report.summary_location
    return CrashSignature(
        report.sanitizer,
        report.bug_class,
        crash_site(report.site_stack, project),
        (where.function or "") if where else _summary_function(report.summary or ""),
    )


def _summary_function(summary: str) -> str:
    return summary.rsplit(" in ", 1)[1].strip() if " in " in summary else ""


def parse_signature(text: bytes | str, project: str | None) -> CrashSignature | None:
    """The signature of the first report in ``text``; None when it holds none."""
    return signature(parse_report(text), project)


def crash_frames(text: bytes | str) -> list[Frame]:
    """The crash stack's frames (a leak's allocation stack) that name a function and a source
    file, innermost first."""
    stack = parse_report(text).site_stack
    return [f for f in (stack.frames if stack else []) if f.function and f.file]


def fuzz_target(text: bytes | str) -> str | None:
    """The fuzz target a libFuzzer report ran (``/out/xml_fuzzer: Running 1 inputs ...``): its
    file name under ``/out`` (``xml_fuzzer``); None when the report does not say."""
    return parse_report(text).fuzz_target


def where(frame: Frame | None) -> str | None:
    """A frame as the judges compare and show it: ``f (/src/p/x.c)``; None for no frame."""
    return f"{frame.function} ({frame.file})" if frame else None


def _where(frame: Frame | None) -> str:
    return where(frame) or "none"


def mismatch(expected: CrashSignature, actual: CrashSignature) -> str | None:
    """Why ``actual`` (the image's crash) is not the crash ``expected`` (error.txt); None: same.
    Frames are compared by function and file (line numbers move between builds)."""
    problems = []
    if expected.sanitizer_class != actual.sanitizer_class:
        problems.append(
            f"sanitizer class is {actual.sanitizer_class}, error.txt says {expected.sanitizer_class}"
        )
    if _where(expected.frame) != _where(actual.frame):
        problems.append(
            f"top in-project frame is {_where(actual.frame)}, error.txt says {_where(expected.frame)}"
        )
    return "; ".join(problems) or None


def source_frames(report: SanitizerReport, kind: str = "crash") -> list[Frame]:
    """The frames of a stack (``crash``: a leak's allocation stack; ``freed``, ``allocated``...)
    that have a source file and are neither the sanitizer runtime, the system nor libFuzzer's
    driver; the fuzz entry point stays (a fix can be there)."""
    stack = report.site_stack if kind == "crash" else report.stack(kind)  # type: ignore[arg-type]
    return [
        f
        for f in (stack.frames if stack else [])
        if f.file
        and not (is_runtime_frame(f) or is_system_frame(f))
        and not (f.function or "").startswith("fuzzer::")
    ]


def _bare_name(function: str) -> str:
    return function.split("(")[0].strip().rsplit("::", 1)[-1]


FIX_POSITIONS = ("crash-frame", "caller", "free-stack", "allocation-stack", "off-stack")
"""Where a fix can lie relative to the report, in the words of the bundled tasks' ``task.toml``
(``fix_position``), so the dashboard's groups and a report's breakdown read alike."""


def fix_position(report: SanitizerReport, ground_truth: dict | None) -> str:
    """Where the fix is relative to the report (by function name): the crash frame, a caller
    on the crash stack, the stack that freed or allocated the memory, or on no stack: one of
    :data:`FIX_POSITIONS`; ``unknown`` without ground truth."""
    if not ground_truth or not ground_truth.get("files"):
        return "unknown"
    names = {
        _bare_name(fn.get("qualified") or fn.get("name") or "")
        for f in ground_truth["files"]
        for fn in f.get("functions", [])
    }
    names.discard("")
    for i, frame in enumerate(source_frames(report)):
        if _bare_name(frame.function or "") in names:
            return "crash-frame" if i == 0 else "caller"
    for position, kind in (("free-stack", "freed"), ("allocation-stack", "allocated")):
        if any(_bare_name(f.function or "") in names for f in source_frames(report, kind)):
            return position
    return "off-stack"


def report_start(text: str) -> int:
    """Where the sanitizer's own report begins in ``text``: the start of the line the shared
    reader takes for its ERROR line (0 when it finds none). What comes before is the fuzzer's
    chatter (libFuzzer's ``INFO`` lines); the dashboard opens the report here."""
    line = parse_report(text).error_line
    at = text.find(line) if line else -1
    return text.rfind("\n", 0, at) + 1 if at > 0 else 0
