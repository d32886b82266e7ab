"""The crash signature of a sanitizer report: its class (tool and type from the SUMMARY line)
and its top in-project frame (the first frame of the crash stack under ``/src/<project>/``).

Green compares the signature of ``error.txt`` with the one the task image produces; this is all
it needs of a report, so it keeps its own small parser rather than depending on purple's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SUMMARY = re.compile(r"^SUMMARY: (?P<tool>\w*Sanitizer): (?P<type>[\w-]+)", re.MULTILINE)
_ERROR = re.compile(r"^==\d+==ERROR: \w*Sanitizer|: runtime error: ", re.MULTILINE)
_FRAME = re.compile(r"^\s*#(?P<n>\d+) 0x[0-9a-fA-F]+ in (?P<func>.+?) (?P<file>/[^\s:()]+)")
_ANY_REPORT = re.compile(r"ERROR: \w*Sanitizer|^SUMMARY: \w*Sanitizer|runtime error: ", re.M)


@dataclass(frozen=True)
class Frame:
    function: str
    file: str
    """As printed: ``/src/<project>/src/x.c``."""


@dataclass(frozen=True)
class CrashSignature:
    tool: str
    """AddressSanitizer, MemorySanitizer, UndefinedBehaviorSanitizer, LeakSanitizer, ..."""
    crash_type: str
    """heap-buffer-overflow, double-free, SEGV, ..."""
    frame: Frame | None
    """The first crash-stack frame under the project's source folder (None: none there)."""

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
    """The frames of the first stack after the report's ERROR line (the crashing access)."""
    start = _ERROR.search(text)
    frames: list[Frame] = []
    for line in text[start.start() if start else 0 :].splitlines():
        m = _FRAME.match(line)
        if m is None:
            if frames and not line.strip().startswith("#"):
                break  # the crash stack has ended
            continue
        if frames and m.group("n") == "0":
            break  # a second stack starts
        frames.append(Frame(function=m.group("func"), file=m.group("file")))
    return frames


def parse_signature(text: str, project: str | None) -> CrashSignature | None:
    """The signature of the first report in ``text``; None when it has no SUMMARY line."""
    m = _SUMMARY.search(text)
    if m is None:
        return None
    prefix = f"/src/{project}/" if project else "/src/"
    frame = next((f for f in crash_frames(text) if f.file.startswith(prefix)), None)
    return CrashSignature(tool=m.group("tool"), crash_type=m.group("type"), frame=frame)


def mismatch(expected: CrashSignature, actual: CrashSignature) -> str | None:
    """Why ``actual`` (the image's crash) is not the crash ``expected`` (error.txt); None: same."""
    problems = []
    if expected.sanitizer_class != actual.sanitizer_class:
        problems.append(
            f"sanitizer class is {actual.sanitizer_class}, error.txt says {expected.sanitizer_class}"
        )
    if expected.frame != actual.frame:
        want = f"{expected.frame.function} ({expected.frame.file})" if expected.frame else "none"
        got = f"{actual.frame.function} ({actual.frame.file})" if actual.frame else "none"
        problems.append(f"top in-project frame is {got}, error.txt says {want}")
    return "; ".join(problems) or None
