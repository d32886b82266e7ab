"""Per-file download locks that hold across threads *and* processes.

A lock is identified by its lock file's path. Inside one process a ``threading.Lock`` per path
serializes threads (``flock`` alone is per open file description, and waiting on it would block
a thread without a timeout); across processes sharing the cache directory ``fcntl.flock`` on the
lock file does the same. Lock files are left in place: deleting them would race with a process
that has just opened one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from services.green.kinds.arvo.assets.base import AssetTimeout

try:  # POSIX only; green runs on Linux (Docker). Without fcntl we fall back to thread locks.
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

_registry_guard = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}

_POLL_S = 0.05


def _thread_lock(key: str) -> threading.Lock:
    with _registry_guard:
        lock = _thread_locks.get(key)
        if lock is None:
            lock = _thread_locks[key] = threading.Lock()
        return lock


@contextmanager
def file_lock(lock_path: Path, timeout_s: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock named by ``lock_path`` (created if missing; its folder must exist).

    ``timeout_s=None`` waits forever; otherwise :class:`AssetTimeout` after ``timeout_s`` seconds.
    """
    key = os.path.abspath(lock_path)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    tlock = _thread_lock(key)
    if not tlock.acquire(timeout=-1 if timeout_s is None else max(timeout_s, 0.0)):
        raise AssetTimeout(f"timed out after {timeout_s}s waiting for the lock {lock_path}")
    try:
        fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if fcntl is not None:
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if deadline is not None and time.monotonic() >= deadline:
                            raise AssetTimeout(
                                f"timed out after {timeout_s}s waiting for the lock {lock_path} "
                                "(held by another process)"
                            ) from None
                        time.sleep(_POLL_S)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
    finally:
        tlock.release()
