"""structlog set-up shared by both services: one run folder, one file per ARVO id.

``<log_dir>/log_<timestamp>/agents.log`` holds what belongs to no task; every event bound to
a task (``log_key`` in structlog's context variables, e.g. ``arvo_10055``) goes to
``<log_dir>/log_<timestamp>/<log_key>.log`` instead, never to both. Routing is by context
variable, so concurrent tasks never bleed into each other's files and no handler is attached or
detached per task. Both services append whole lines to the same files (O_APPEND), so the
ARVO file tells the story from both sides. Set ``ARENA_LOG_RUN`` to the same run folder name
for both services (docker compose does) to share one folder.

A task's file is open only while code runs in its log context (:func:`task_log_context`): the
last one to leave closes it, and a line logged under no such context opens and closes it. So
the open files follow the tasks under way, never the number of tasks a process has served.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import threading
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import structlog

from services.shared.text import escape_controls

AGENTS_LOG = "agents"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_LONGEST = 120
"""A file name holds 255 bytes: a longer key keeps its start and gains a hash of the whole."""


class LogRouter:
    """The final structlog processor: writes each rendered line to the file its event belongs to.
    ``agents.log`` stays open; a task's file while it is held (:meth:`hold`)."""

    def __init__(self, run_dir: Path, echo: TextIO | None = sys.stderr) -> None:
        self.run_dir = run_dir
        self.echo = echo
        self._files: dict[str, TextIO] = {}
        self._held: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._render = structlog.processors.LogfmtRenderer(
            key_order=["timestamp", "level", "service", "event", "task_id"], drop_missing=True
        )
        run_dir.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def _name(key: str | None) -> str:
        # The key may come from a peer (purple reads it from green's message metadata): keep it
        # a plain file name inside the run folder.
        name = _UNSAFE.sub("_", key or AGENTS_LOG).lstrip(".") or AGENTS_LOG
        if len(name) <= _LONGEST:
            return name
        digest = hashlib.sha256((key or "").encode("utf-8", "surrogatepass")).hexdigest()
        return f"{name[: _LONGEST - 17]}_{digest[:16]}"

    def write(self, key: str | None, line: str) -> None:
        name = self._name(key)
        with self._lock:
            f = self._files.get(name)
            if f is None:
                f = (self.run_dir / f"{name}.log").open("a", encoding="utf-8", buffering=1)
                if name == AGENTS_LOG or self._held[name]:
                    self._files[name] = f
            f.write(line + "\n")
            if name not in self._files:  # nobody holds it: no file stays open for it
                f.close()
            if self.echo is not None:
                self.echo.write(line + "\n")

    def hold(self, key: str) -> None:
        """Keep ``key``'s file open for its lines until as many :meth:`release` calls."""
        with self._lock:
            self._held[self._name(key)] += 1

    def release(self, key: str) -> None:
        """One holder of ``key`` is done; the last one closes its file (reopened, in append
        mode, if the key logs again)."""
        name = self._name(key)
        with self._lock:
            if self._held[name] > 1:
                self._held[name] -= 1
                return
            self._held.pop(name, None)
            f = self._files.pop(name, None) if name != AGENTS_LOG else None
            if f is not None:
                f.close()

    def open_files(self) -> int:
        """How many files the router holds open (``agents.log`` and the held tasks')."""
        with self._lock:
            return len(self._files)

    def emit(self, event_dict: dict[str, Any]) -> None:
        """Render the event as one logfmt line, its control characters escaped (an agent's
        command text and output reach the logs: an ESC, a NUL or a U+202E must not drive the
        terminal that shows them, nor forge or reorder a line), and write it."""
        key = event_dict.pop("log_key", None)
        self.write(key, escape_controls(self._render(None, "", event_dict), keep=""))

    def close_all(self) -> None:
        with self._lock:
            for f in self._files.values():
                f.close()
            self._files.clear()


_router: LogRouter | None = None


def _route(_logger: Any, _name: str, event_dict: dict[str, Any]) -> str:
    """The last processor: hand the event to the current router (or stderr before set-up)."""
    if _router is not None:
        _router.emit(event_dict)
    else:
        sys.stderr.write(f"{event_dict}\n")
    raise structlog.DropEvent


def run_dir_for(log_dir: str | os.PathLike[str]) -> Path:
    run = os.environ.get("ARENA_LOG_RUN") or datetime.now(UTC).strftime("log_%Y-%m-%d_%H-%M-%S")
    return Path(log_dir) / run


def configure_logging(
    log_dir: str | os.PathLike[str], *, echo: bool = True, level: int = logging.INFO
) -> LogRouter:
    """Route structlog (and the stdlib loggers of our libraries) through one :class:`LogRouter`.

    Idempotent for the same folder; a new folder (tests start services with their own) replaces
    the router. Both services may share one process (tests): lines name their service from the
    logger's module (``services.green.*`` -> green).
    """
    global _router
    run_dir = run_dir_for(log_dir)
    if _router is not None and _router.run_dir == run_dir:
        return _router
    if _router is not None:
        _router.close_all()
    router = LogRouter(run_dir, sys.stderr if echo else None)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _route,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        cache_logger_on_first_use=False,
    )
    # Library loggers (uvicorn, httpx, docker) go through the same router via a bridge handler.
    root = logging.getLogger()
    root.handlers[:] = [_StdlibBridge()]
    root.setLevel(logging.WARNING)
    for name in ("uvicorn.error", "services"):
        logging.getLogger(name).setLevel(logging.INFO)
    _router = router
    return router


def router() -> LogRouter | None:
    return _router


class _StdlibBridge(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        # structlog swallows the DropEvent the router raises after writing the line.
        structlog.get_logger(record.name, source=record.name).log(
            record.levelno, record.getMessage()
        )


@contextmanager
def task_log_context(task_id: str, log_key: str | None, **extra: Any):
    """Bind a task's identity to every log line written inside (and in tasks spawned inside),
    and hold its file open meanwhile (the last context of a key to leave closes it)."""
    held = _router if log_key else None
    if held is not None:
        held.hold(log_key)
    try:
        with structlog.contextvars.bound_contextvars(task_id=task_id, log_key=log_key, **extra):
            yield
    finally:
        if held is not None:
            held.release(log_key)


def get_logger(name: str) -> Any:
    """A logger for a module; ``services.green.x`` and ``services.purple.x`` name their service."""
    parts = name.split(".")
    service = parts[1] if len(parts) > 1 and parts[0] == "services" else parts[0]
    return structlog.get_logger(name, service=service)
