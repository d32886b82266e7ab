"""Bounded capture of a command's output: keep the head and the tail, count the middle.

A command may print gigabytes; green must not. :class:`OutputCapture` is fed the stream
chunk by chunk and never holds more than about ``1.5 * limit`` bytes, whatever the volume.
"""

from __future__ import annotations


class OutputCapture:
    """Keeps the first ``limit // 2`` and the last ``limit - limit // 2`` bytes fed to it."""

    def __init__(self, limit: int) -> None:
        self._head_limit = max(limit, 0) // 2
        self._tail_limit = max(limit, 0) - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        """Bytes fed so far."""

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self.total += len(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data and self._tail_limit:
            self._tail += data
            # Trim lazily (at twice the limit) so a stream of small chunks stays O(n).
            if len(self._tail) > 2 * self._tail_limit:
                del self._tail[: -self._tail_limit]

    @property
    def bytes_cut(self) -> int:
        return self.total - len(self._head) - min(len(self._tail), self._tail_limit)

    def text(self) -> str:
        """The kept output as UTF-8 (invalid bytes replaced), with a line where bytes were cut."""
        tail = bytes(self._tail[-self._tail_limit :]) if self._tail_limit else b""
        cut = self.bytes_cut
        if not cut:
            return (bytes(self._head) + tail).decode("utf-8", errors="replace")
        head = self._head.decode("utf-8", errors="replace")
        return f"{head}\n[... {cut:,} bytes cut ...]\n{tail.decode('utf-8', errors='replace')}"
