"""Green's one reader of sanitizer reports (ASan, MSan, UBSan, LSan): the bug class, the crash
stack, the crash signature, and where a fix lies on the stack.

Three users: the fixture builder checks the crash each bundled task produces (``fixtures/``);
the dataset tools compare the signature of ``error.txt`` with the crash the task image
produces (``green/kinds/arvo/datasets/verify.py``); the dashboard shows and groups tasks by bug class and fix
position (``green/ui/``). The judge never reads a report. Purple's analyst reads reports far more
closely with its own parser: the agent under test shares no code with the judge's side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ERROR_LINE = re.compile(r"^==\d+==ERROR: \w*Sanitizer|: runtime error: ", re.MULTILINE)
_ERROR = re.compile(r"ERROR: (\w+Sanitizer): (?:attempting )?([\w-]+)")
_SUMMARY = re.compile(r"^SUMMARY: (\w*Sanitizer): ([A-Za-z][\w-]*)", re.MULTILINE)
_RUNTIME = re.compile(r"runtime error: ([a-z][\w -]+?)(?: of |:| in |$)", re.M)
_LEAK = re.compile(r"ERROR: LeakSanitizer")
_ANY_REPORT = re.compile(r"ERROR: \w*Sanitizer|^SUMMARY: \w*Sanitizer|runtime error: ", re.M)
_FRAME = re.compile(
    r"^\s*#(?P<n>\d+) 0x[0-9a-fA-F]+ in (?P<func>.+?) (?P<file>/[^\s:()]+)(?::(?P<line>\d+))?"
)


@dataclass(frozen=True)
class Frame:
    index: int
    function: str
    file: str
    """As printed: ``/src/<project>/src/x.c``."""
    line: int | None = None


@dataclass(frozen=True)
class CrashInfo:
    bug_class: str
    """e.g. ``heap-buffer-overflow``, ``heap-use-after-free``, ``double-free``; ``unknown``."""
    sanitizer: str | None = None
    frames: list[Frame] = field(default_factory=list)
    """The crash stack, innermost first; fuzzer-driver and libc frames dropped."""
    free_frames: list[Frame] = field(default_factory=list)
    """The stack that freed the memory (``freed by thread``), when the report has one."""
    alloc_frames: list[Frame] = field(default_factory=list)
    """The stack that allocated it (``previously allocated by thread``), when it has one."""


@dataclass(frozen=True)
class CrashSignature:
    tool: str
    """AddressSanitizer, MemorySanitizer, UndefinedBehaviorSanitizer, LeakSanitizer, ..."""
    crash_type: str
    """heap-buffer-overflow, double-free, SEGV, ..."""
    frame: Frame | None
    """The first crash-stack frame under the project's source folder (None: none there)."""
    summary_function: str = ""
    """The function the SUMMARY line names (``... in __interceptor_free``); empty if none."""

    @property
    def sanitizer_class(self) -> str:
        return f"{self.tool}: {self.crash_type}"

    def describe(self) -> str:
        where = f"{self.frame.function} at {self.frame.file}" if self.frame else "no project frame"
        return f"{self.sanitizer_class}, {where}"


def has_report(text: str) -> bool:
    """True when ``text`` holds any sanitizer report (LeakSanitizer and UBSan included)."""
    return bool(_ANY_REPORT.search(text))


def crash_frames(text: str) -> list[Frame]:
    """The frames of the first stack after the report's ERROR line (the crashing access); the
    stack ends at the first other line or where a second stack (allocation, free) starts."""
    start = _ERROR_LINE.search(text)
    frames: list[Frame] = []
    for text_line in text[start.start() if start else 0 :].splitlines():
        m = _FRAME.match(text_line)
        if m is None:
            if frames and not text_line.strip().startswith("#"):
                break
            continue
        index = int(m.group("n"))
        if frames and index <= frames[-1].index:
            break
        line = int(m.group("line")) if m.group("line") else None
        frames.append(Frame(index, m.group("func"), m.group("file"), line))
    return frames


_SIDE = re.compile(r"^(?P<what>freed|previously allocated|allocated) by thread\b.*$", re.M)


def _stack_at(lines: list[str]) -> list[Frame]:
    """The frames of the stack that starts at ``lines`` (it ends at the first other line)."""
    frames: list[Frame] = []
    for text_line in lines:
        m = _FRAME.match(text_line)
        if m is None:
            if text_line.strip().startswith("#"):
                continue  # a frame without a source file (an interceptor, a library)
            break
        line = int(m.group("line")) if m.group("line") else None
        frames.append(Frame(int(m.group("n")), m.group("func"), m.group("file"), line))
    return frames


def _ours(frames: list[Frame]) -> list[Frame]:
    """Without the fuzzer driver's and libc's frames."""
    return [
        f
        for f in frames
        if "fuzzer::" not in f.function and not f.file.startswith(("/lib", "/usr/lib"))
    ]


def side_stacks(text: str) -> tuple[list[Frame], list[Frame]]:
    """The report's first free stack and first allocation stack (empty when it has none)."""
    found: dict[str, list[Frame]] = {}
    for m in _SIDE.finditer(text):
        what = "free" if m.group("what") == "freed" else "alloc"
        if what not in found:
            found[what] = _ours(_stack_at(text[m.end() :].lstrip("\n").splitlines()))
    return found.get("free", []), found.get("alloc", [])


def parse_report(text: str) -> CrashInfo:
    """Bug class and crash stack of a sanitizer report."""
    bug, sanitizer = "unknown", None
    if _LEAK.search(text):
        sanitizer, bug = "LeakSanitizer", "memory-leak"
    elif m := _SUMMARY.search(text) or _ERROR.search(text):
        sanitizer, bug = m.group(1), m.group(2)
    elif m := _RUNTIME.search(text):
        sanitizer, what = "UndefinedBehaviorSanitizer", m.group(1).strip()
        bug = "null-pointer-dereference" if "null pointer" in text else what.replace(" ", "-")
    return CrashInfo(bug, sanitizer, _ours(crash_frames(text)), *side_stacks(text))


def parse_signature(text: str, project: str | None) -> CrashSignature | None:
    """The signature of the first report in ``text``; None when it has no SUMMARY line."""
    m = _SUMMARY.search(text)
    if m is None:
        return None
    prefix = f"/src/{project}/" if project else "/src/"
    frame = next((f for f in crash_frames(text) if f.file.startswith(prefix)), None)
    rest = text[m.end() :].split("\n", 1)[0]
    function = rest.rsplit(" in ", 1)[1].strip() if " in " in rest else ""
    return CrashSignature(m.group(1), m.group(2), frame, function)


_FUZZ_TARGET = re.compile(r"^(/out/[^\s:]+): Running \d+ inputs", re.M)


def fuzz_target(text: str) -> str | None:
    """The fuzz target a libFuzzer report ran (``/out/xml_fuzzer: Running 1 inputs ...``): its
    file name under ``/out`` (``xml_fuzzer``); None when the report does not say."""
    m = _FUZZ_TARGET.search(text)
    return m.group(1).rsplit("/", 1)[-1] if m else None


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


def _bare_name(function: str) -> str:
    return function.split("(")[0].strip().rsplit("::", 1)[-1]


FIX_POSITIONS = ("crash-frame", "caller", "free-stack", "allocation-stack", "off-stack")
"""Where a fix can lie relative to the report, in the words of the bundled tasks' ``task.toml``
(``fix_position``), so the dashboard's groups and a report's breakdown read alike."""


def fix_position(info: CrashInfo, ground_truth: dict | None) -> str:
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
    for i, frame in enumerate(info.frames):
        if _bare_name(frame.function) in names:
            return "crash-frame" if i == 0 else "caller"
    for where, frames in (
        ("free-stack", info.free_frames),
        ("allocation-stack", info.alloc_frames),
    ):
        if any(_bare_name(f.function) in names for f in frames):
            return where
    return "off-stack"
