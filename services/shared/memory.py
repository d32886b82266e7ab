"""A long-running service's memory: glibc's allocator tuned for a threaded server, and the memory
it has freed handed back to the system.

Green and purple run for days, with a few dozen threads (database calls, Docker calls, file
work) allocating and freeing transient buffers of every size. glibc gives threads arenas of
their own (up to eight per CPU) and raises the size above which a buffer gets its own mapping
each time such a buffer is freed; in a long run both leave freed memory inside the heap, which
the process keeps resident. Measured on green: resident memory 137 -> 206 MB over 600 tasks,
with the Python objects and the memory in use unchanged (the growth was free memory).
:func:`tune_allocator` (at start, before the threads) caps the arenas at two and fixes that
size at 128 KiB; :class:`Trimmer` returns freed memory to the system (``malloc_trim``) at most
every :data:`TRIM_EVERY_S`. Where the C library is not glibc, both do nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import time

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
"""``mallopt`` parameters (glibc's ``malloc.h``)."""
ARENAS = 2
MMAP_THRESHOLD = 128 * 1024
TRIM_EVERY_S = 30.0


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") else None


_LIBC = _glibc()


def tune_allocator() -> bool:
    """Cap glibc's arenas and fix its mmap threshold (call it before starting threads). True
    when the C library took both."""
    if _LIBC is None:
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, ARENAS)) and bool(
        _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    )


class Trimmer:
    """Hands freed memory back to the system, at most every ``every_s`` seconds."""

    def __init__(self, every_s: float = TRIM_EVERY_S) -> None:
        self.every_s = every_s
        self._last = time.monotonic()

    async def maybe_trim(self) -> None:
        """Trim (in a thread: it walks the heap for a few milliseconds) when it is due."""
        if _LIBC is None or time.monotonic() - self._last < self.every_s:
            return
        self._last = time.monotonic()
        await asyncio.to_thread(_LIBC.malloc_trim, 0)
