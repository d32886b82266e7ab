"""What the dashboard reads from a sanitizer report: the bug class and the crash stack.

Only for display and grouping (filters, per-class plots); the judge never uses it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ERROR = re.compile(r"ERROR: (\w+Sanitizer): (?:attempting )?([\w-]+)")
_SUMMARY = re.compile(r"SUMMARY: (\w+Sanitizer): ([A-Za-z][\w-]*)")
_RUNTIME = re.compile(r"runtime error: ([a-z][\w -]+?)(?: of |:| in |$)", re.M)
_LEAK = re.compile(r"ERROR: LeakSanitizer")
_FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.+?) (/\S+?)(?::(\d+))?(?::\d+)?$", re.M)


@dataclass(frozen=True)
class Frame:
    index: int
    function: str
    file: str
    line: int | None


@dataclass(frozen=True)
class CrashInfo:
    bug_class: str
    """e.g. ``heap-buffer-overflow``, ``heap-use-after-free``, ``double-free``; ``unknown``."""
    sanitizer: str | None = None
    frames: list[Frame] = field(default_factory=list)
    """The first stack (the crash), innermost first; fuzzer and libc frames dropped."""


def _bare_name(function: str) -> str:
    name = function.split("(")[0].strip()
    return name.rsplit("::", 1)[-1]


def parse_report(text: str) -> CrashInfo:
    """Bug class and crash stack of a sanitizer report (ASan, MSan, UBSan, LSan)."""
    bug, sanitizer = "unknown", None
    if _LEAK.search(text):
        sanitizer, bug = "LeakSanitizer", "memory-leak"
    elif m := _SUMMARY.search(text) or _ERROR.search(text):
        sanitizer, bug = m.group(1), m.group(2)
    elif m := _RUNTIME.search(text):
        sanitizer, what = "UndefinedBehaviorSanitizer", m.group(1).strip()
        bug = "null-pointer-dereference" if "null pointer" in text else what.replace(" ", "-")
    frames: list[Frame] = []
    for m in _FRAME.finditer(text):
        index = int(m.group(1))
        if frames and index <= frames[-1].index:
            break  # the next stack (allocation, free) starts
        function, path = m.group(2), m.group(3)
        if "fuzzer::" in function or path.startswith(("/lib", "/usr/lib")) or "(" in path:
            continue
        frames.append(Frame(index, function, path, int(m.group(4)) if m.group(4) else None))
    return CrashInfo(bug, sanitizer, frames)


def fix_position(info: CrashInfo, ground_truth: dict | None) -> str:
    """Where the fix is relative to the crash: ``crash frame``, ``N frame(s) up`` or
    ``not in the stack`` (by function name, then by file); ``unknown`` without ground truth."""
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
            return "crash frame" if i == 0 else f"{i} frame{'s' if i > 1 else ''} up"
    return "not in the stack"
