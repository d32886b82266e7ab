"""Floors of an ARVO task: what an empty submission and the crash-frame baseline score.

The crash-frame baseline names the crash site of the task's crash report (``error.txt``, read
with the one report reader, :mod:`services.shared.sanitizer`): the top in-project frame of the
crash stack that is not the fuzz harness's (a harness frame only when no other is there), as its
only location: a trivial agent that reads the report and answers its first frame. Both are
scored by the same judge as the agent, so every report can show them next to the agent's score.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.green.kinds.arvo.judge import Judge, PreparedTask
from services.green.kinds.arvo.scoring.metrics import METRICS
from services.shared.loc import LocJson
from services.shared.sanitizer import parse_report
from services.shared.sanitizer.frame_roles import crash_site


def crash_frame_location(error_text: bytes | str, project: str | None) -> dict[str, Any] | None:
    """The crash site under ``/src/<project>/`` as a loc.json location (None when no frame of
    the crash stack lies in the project)."""
    frame = crash_site(parse_report(error_text).site_stack, project)
    if frame is None or frame.file is None:
        return None
    line = frame.line or 1
    return {
        "file": frame.file,
        "function": frame.function,
        "line_start": line,
        "line_end": line,
    }


def floors(error_txt: Path, prepared: PreparedTask, judge: Judge) -> dict[str, Any]:
    """``empty`` and ``crash_frame`` metrics (and the baseline's location)."""
    empty = judge.score(None, prepared).metrics()
    loc = crash_frame_location(error_txt.read_bytes(), prepared.project)
    if loc is None:
        crash = dict.fromkeys(METRICS, 0.0)
    else:
        crash = judge.score(LocJson(locations=[loc]), prepared).metrics()
    return {
        "empty": {m: float(empty.get(m, 0.0)) for m in METRICS},
        "crash_frame": {m: float(crash.get(m, 0.0)) for m in METRICS},
        "crash_frame_location": loc,
    }


def bug_class(error_txt: Path) -> str:
    """The report's bug class (``heap-buffer-overflow``...; ``unknown``): what the agent reads
    in error.txt too, so it is public."""
    return parse_report(error_txt.read_bytes()).bug_class
