"""A second transport for the shell session: local processes over pipes (asyncio subprocess).

Shows that :mod:`services.sandbox.framing` depends on no Docker: the very same session runs
over a process's stdin/stdout/stderr pipes on this machine. For tests only: a local process is
no sandbox (no isolation), so no provider offers it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Mapping, Sequence

from services.sandbox.framing import STDERR, STDOUT, Pieces

CHUNK = 1 << 16
EXIT_POLL = 0.05
"""Seconds between two looks at whether the process exited."""


class PipeStream:
    """A process's pipes as an :class:`~services.sandbox.framing.ExecStream`."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        self._readers = {STDOUT: proc.stdout, STDERR: proc.stderr}
        self._pending: dict[int, asyncio.Task[bytes]] = {}
        self._ended: set[int] = set()

    async def send(self, data: bytes, timeout: float) -> bool:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            await asyncio.wait_for(self.proc.stdin.drain(), max(timeout, 0.001))
        except TimeoutError:
            return False
        except (BrokenPipeError, ConnectionResetError) as e:
            raise ConnectionError(f"the process is gone: {e}") from e
        return True

    async def receive(self, timeout: float) -> Pieces | None:
        """Like Docker's exec stream, the stream ends when the process exits (even if a child
        it left still holds the pipes). Its exit status is polled: asyncio's ``wait()`` waits
        for the pipes too."""
        for channel, reader in self._readers.items():
            if channel not in self._ended and channel not in self._pending:
                self._pending[channel] = asyncio.ensure_future(reader.read(CHUNK))
        deadline = time.monotonic() + max(timeout, 0)
        while True:
            done, _ = await asyncio.wait(
                self._pending.values(),
                timeout=min(EXIT_POLL, max(deadline - time.monotonic(), 0)),
                return_when=asyncio.FIRST_COMPLETED,
            )
            pieces = self._collect(done)
            if pieces:
                return pieces
            if self.proc.returncode is not None or len(self._ended) == len(self._readers):
                return []
            if time.monotonic() >= deadline:
                return None

    def _collect(self, done: set[asyncio.Future[bytes]]) -> Pieces:
        pieces: Pieces = []
        for channel, task in list(self._pending.items()):
            if task in done:
                del self._pending[channel]
                data = task.result()
                if data:
                    pieces.append((channel, data))
                else:
                    self._ended.add(channel)
        return pieces

    def abort(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()

    def close(self) -> None:
        self.abort()
        for task in self._pending.values():
            task.cancel()


class PipeTransport:
    """Starts local processes (an :class:`~services.sandbox.framing.ExecTransport`)."""

    def __init__(self) -> None:
        self.streams: list[PipeStream] = []

    async def open(self, argv: Sequence[str]) -> PipeStream:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self.streams.append(PipeStream(proc))
        return self.streams[-1]

    async def aclose(self) -> None:
        """Kill every process this transport started and wait for them (pipes closed)."""
        for stream in self.streams:
            stream.close()
            await stream.proc.wait()
            if stream.proc.stdin is not None:
                stream.proc.stdin.close()

    async def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            env={**os.environ, **(env or {})},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await proc.wait()
