"""The per-task record of a run, written incrementally.

``<dir>/<task_id>.<policy>.events.jsonl`` gets one JSON line per event as it happens (every message,
LLM call with tokens/cost/duration, command with its output, compaction, submission), so a
crash or a cancel loses nothing and no file is rewritten per step. ``<dir>/<task_id>.<policy>.traj.json``
is written once at the end: config, model, task, result, command history, final messages.
A task id that is not a plain file name (a character outside ``[A-Za-z0-9_.-]``, a leading dot,
over 120 characters) is named by what is left of it, ``~`` and 16 hex digits of its SHA-256, so
two ids never share files and none is hidden.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from services.shared.files import write_atomic


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:120] or "task"


def _task_part(task_id: str) -> str:
    safe = _safe(task_id)
    if safe == task_id and not safe.startswith("."):
        return safe
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{safe.lstrip('.')[:100]}~{digest}"


class Trajectory:
    @staticmethod
    def stem(task_id: str, policy: str) -> str:
        """The file-name stem of a task's trajectory files (``<stem>.events.jsonl``, ...)."""
        return f"{_task_part(task_id)}.{_safe(policy)}"

    def __init__(self, directory: str | Path | None, task_id: str, policy: str = "react") -> None:
        self.task_id = task_id
        self.policy = policy
        self.start = time.monotonic()
        self.started_at = datetime.now(UTC)
        """The wall-clock time of ``start`` (each event's ``t`` counts seconds from it)."""
        self.events = 0
        self._file: TextIO | None = None
        self.events_path: Path | None = None
        self.final_path: Path | None = None
        if directory is not None:
            d = Path(directory)
            d.mkdir(parents=True, exist_ok=True)
            stem = self.stem(task_id, policy)
            self.events_path = d / f"{stem}.events.jsonl"
            self.final_path = d / f"{stem}.traj.json"
            self._file = self.events_path.open("a", encoding="utf-8")

    def event(self, type_: str, **data: Any) -> None:
        self.events += 1
        if self._file is None:
            return
        record = {"type": type_, "t": round(time.monotonic() - self.start, 4), **data}
        self._file.write(json.dumps(record, default=str, ensure_ascii=False) + "\n")
        self._file.flush()

    def finish(self, **final: Any) -> None:
        """Write the final JSON (once) and close the events file."""
        if self.final_path is not None:
            doc = {
                "task_id": self.task_id,
                "policy": self.policy,
                "finished_at": datetime.now(UTC).isoformat(),
                "events_file": self.events_path.name if self.events_path else None,
                **final,
            }
            write_atomic(
                self.final_path, json.dumps(doc, default=str, ensure_ascii=False, indent=1)
            )
        self.close()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
