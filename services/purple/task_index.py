"""Purple's record of each task it took, on disk beside the trajectories: no database.

``<trajectory_dir>/tasks/<key>.json`` holds one task's record (who sent it, the policy, its
status and totals, which events files are its trajectory), replaced whole and atomically at each
change (``write_atomic``: a reader sees the old record or the new, never half, and a crash
mid-write leaves the old one). A lookup is one file open, whatever the number of tasks.

``<trajectory_dir>/working/<process>/<key>.<job>`` marks a job under way, in the folder of the
purple process running it, which holds an ``flock`` on the folder's ``.owner`` while it lives.
At start-up :meth:`TaskIndex.recover` fails the tasks of the folders whose owner is gone (a
crash left their markers), reading only those; a live purple's folder is left alone, so two
purples on one folder never fail each other's tasks.

``<key>`` is the task id itself when it is a lower-case id (``[a-z0-9][a-z0-9-]*``, green's
UUIDs), else ``_`` and the SHA-256 of the id: no id reaches the file system as a path (``../``,
``/``, NUL, a thousand characters), two ids never share a record, and a case-insensitive file
system cannot merge two of them. Each task has one writer (its job in the executor); two jobs
of one id write the same record, the last write wins.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from services.purple.trajectory import Trajectory
from services.shared.files import write_atomic
from services.shared.logging import get_logger

log = get_logger("services.purple.task_index")

_PLAIN = re.compile(r"[a-z0-9][a-z0-9-]{0,127}")


def utcnow() -> datetime:
    return datetime.now(UTC)


def key_of(task_id: str) -> str:
    """The file-name key of a task id: the id when it is plain, else ``_<sha256>``."""
    if _PLAIN.fullmatch(task_id):
        return task_id
    return "_" + hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()


class TaskFields(BaseModel):
    """What purple says of a task (``GET /tasks``, ``GET /tasks/{id}``) besides its id,
    messages, submission and commands."""

    a2a_task_id: str | None = None
    green_url: str
    policy: str
    status: str = "working"
    """working | submitted | failed | cancelled"""
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    step_count: int = 0
    command_count: int = 0
    """Written when the task ends; while it works, its views count the commands of its
    trajectory."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    reason: str | None = None
    trajectory_path: str | None = None


class TrajectoryFile(BaseModel):
    """One events file of a task (a policy that worked on it), in the trajectory folder."""

    events: str
    """The file's name."""
    started_at: datetime
    """When its trajectory opened (its events' ``t`` counts seconds from here)."""


class TaskRecord(TaskFields):
    id: str
    """Green's task id, which is also the A2A context id."""
    submission: dict[str, Any] | None = None
    trajectories: list[TrajectoryFile] = []


class TaskIndex:
    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.tasks = self.directory / "tasks"
        self.working = self.directory / "working"
        self._mine: Path | None = None
        self._owner: int | None = None

    def open(self) -> None:
        """This process's folder of markers, locked for as long as it lives."""
        if self._owner is not None:
            return
        name = uuid.uuid4().hex
        making = self.working / f".{name}"  # hidden from recovery until it is locked
        making.mkdir(parents=True)
        fd = os.open(making / ".owner", os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        mine = making.rename(self.working / name)
        self._mine, self._owner = mine, fd

    def close(self) -> None:
        """Give the folder up (its markers, if any, are failed by the next recovery)."""
        if self._owner is None or self._mine is None:
            return
        os.close(self._owner)  # releases the lock
        self._owner = None
        if all(p.name == ".owner" for p in self._mine.iterdir()):
            shutil.rmtree(self._mine, ignore_errors=True)  # nothing left to recover

    def _path(self, task_id: str) -> Path:
        return self.tasks / f"{key_of(task_id)}.json"

    def _read(self, path: Path) -> TaskRecord | None:
        try:
            return TaskRecord.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError) as exc:  # damaged on disk: say so, serve the rest
            log.error("task_index.unreadable", path=str(path), error=str(exc)[:300])
            return None

    def get(self, task_id: str) -> TaskRecord | None:
        record = self._read(self._path(task_id))
        return record if record is not None and record.id == task_id else None

    def put(self, record: TaskRecord) -> None:
        record.updated_at = utcnow()
        write_atomic(self._path(record.id), record.model_dump_json())

    def start(self, record: TaskRecord) -> str:
        """Record a job that starts on the task; returns its marker (for :meth:`end`). The
        marker is made first, so a crash between the two leaves a marker and no record."""
        self.open()
        assert self._mine is not None
        marker = self._mine / f"{key_of(record.id)}.{uuid.uuid4().hex}"
        marker.touch()
        self.put(record)
        return str(marker)

    def end(self, record: TaskRecord, marker: str) -> None:
        """Record how the job ended, then drop its marker."""
        self.put(record)
        Path(marker).unlink(missing_ok=True)

    def opened(self, record: TaskRecord, traj: Trajectory) -> None:
        """A policy opened its trajectory in this folder: the record lists its events file."""
        path = traj.events_path
        if path is None or path.parent.resolve() != self.directory.resolve():
            return
        record.trajectories.append(TrajectoryFile(events=path.name, started_at=traj.started_at))
        self.put(record)

    def files(self, record: TaskRecord) -> list[tuple[Path, datetime]]:
        """The task's events files that exist, oldest first, with when each opened."""
        out = []
        for f in record.trajectories:
            if f.events.startswith(".") or Path(f.events).name != f.events:
                continue  # never a path out of the folder, whatever the record says
            path = self.directory / f.events
            if path.is_file():
                out.append((path, f.started_at))
        return out

    def recent(self, limit: int) -> list[TaskRecord]:
        """The ``limit`` newest tasks (reads every record: a listing, not a lookup)."""
        if not self.tasks.is_dir():
            return []
        with os.scandir(self.tasks) as entries:
            names = [e.path for e in entries if e.name.endswith(".json") and e.name[0] != "."]
        records = [r for r in map(self._read, map(Path, names)) if r is not None]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[:limit]

    def recover(self, reason: str) -> list[str]:
        """At start-up: every task a purple that is gone was still working on fails with
        ``reason``; returns their ids."""
        if not self.working.is_dir():
            return []
        failed = []
        for folder in sorted(self.working.iterdir()):
            hidden = folder.name.startswith(".")
            if hidden or folder == self._mine or not folder.is_dir() or _alive(folder / ".owner"):
                continue
            for marker in sorted(folder.iterdir()):
                key = marker.name.split(".", 1)[0]
                record = None if not key else self._read(self.tasks / f"{key}.json")
                if record is not None and record.status == "working":
                    record.status, record.reason, record.finished_at = "failed", reason, utcnow()
                    self.put(record)
                    failed.append(record.id)
            shutil.rmtree(folder, ignore_errors=True)
        return failed


def _alive(owner: Path) -> bool:
    """Whether a process holds the lock of ``owner`` (one that died holds nothing)."""
    try:
        fd = os.open(owner, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
