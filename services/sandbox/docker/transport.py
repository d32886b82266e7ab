"""The Docker transport of a shell session: a process started with ``exec``, reached through
the hijacked HTTP connection of its ``exec_start``, read as an async byte stream; and green's
own short processes in a container (:func:`run_to_end`), each bounded by a deadline.

The engine multiplexes the process's stdout and stderr on that connection (``tty=False``):
each frame is an 8-byte header (stream id, 3 zero bytes, big-endian payload length) and the
payload; :class:`FrameDecoder` splits them incrementally. On a plain socket (a unix socket, TCP)
the stream is driven by the event loop itself (non-blocking ``recv``/``send`` woken by
``add_reader``/``add_writer``): a waiting command costs no thread. A socket the loop cannot
drive (TLS, which docker-py wraps before handing it over; an ssh tunnel) is read and written
in the provider's thread pool, with ``poll`` bounding each wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import select
import socket
import ssl
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from typing import Any

import docker.errors
from docker import APIClient

from services.sandbox.base import ExecFailed, SandboxError
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error
from services.sandbox.framing import Pieces
from services.sandbox.shell_scripts import SYSTEM_PATH

RECV_BYTES = 1 << 18
EXEC_DEADLINE = 30.0
"""Seconds one of green's own processes in a container (a kill, a scan, a probe, a ``mkdir``)
may take from its start to its end; past it green stops waiting. A trivial one takes about
0.1 s; the container's other processes (the agent's, on their share of its CPU) can slow it."""


class FrameDecoder:
    """Incremental decoder of Docker's multiplexed stream. Payload pieces are returned as
    soon as they arrive, never buffered whole."""

    def __init__(self) -> None:
        self._header = bytearray()
        self._stream = 0
        self._left = 0

    def feed(self, data: bytes) -> Pieces:
        out: Pieces = []
        view = memoryview(data)
        while view:
            if not self._left:
                piece = view[: 8 - len(self._header)]
                self._header += piece
                view = view[len(piece) :]
                if len(self._header) == 8:
                    self._stream, self._left = struct.unpack(">BxxxL", self._header)
                    self._header.clear()
                continue
            piece = view[: self._left]
            out.append((self._stream, bytes(piece)))
            view = view[len(piece) :]
            self._left -= len(piece)
        return out


class DockerExecStream:
    """One exec's hijacked connection as an :class:`~services.sandbox.framing.ExecStream`."""

    def __init__(self, sock: Any, executor: Executor, *, threaded: bool | None = None) -> None:
        self._sock = sock  # what docker-py returned (SocketIO, SSLSocket, ...)
        self._raw: Any = getattr(sock, "_sock", sock)  # the socket itself
        self._executor = executor
        plain = isinstance(self._raw, socket.socket) and not isinstance(self._raw, ssl.SSLSocket)
        self.threaded = not plain if threaded is None else threaded
        if not self.threaded:
            self._raw.setblocking(False)
        self._frames = FrameDecoder()
        self._closed = False

    async def receive(self, timeout: float) -> Pieces | None:
        deadline = time.monotonic() + max(timeout, 0.0)
        while True:
            left = deadline - time.monotonic()
            if self.threaded:
                data = await self._in_thread(self._recv_blocking, left)
            else:
                data = await self._recv(left)
            if data is None:
                return None
            if not data:
                return []
            pieces = self._frames.feed(data)
            if pieces:
                return pieces

    async def send(self, data: bytes, timeout: float) -> bool:
        if self._closed:
            raise ConnectionError("the exec stream is closed")
        deadline = time.monotonic() + max(timeout, 0.0)
        if self.threaded:
            return bool(await self._in_thread(self._send_blocking, data, deadline))
        view = memoryview(data)
        while view:
            try:
                view = view[self._raw.send(view[:RECV_BYTES]) :]
            except (BlockingIOError, InterruptedError):
                if not await self._ready(self._loop().add_writer, deadline - time.monotonic()):
                    return False
            except OSError as e:
                raise ConnectionError(f"the exec stream is gone: {e}") from e
        return True

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._raw.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for s in (self._sock, self._raw):
            with contextlib.suppress(OSError):
                s.close()

    # -- the event loop's way ---------------------------------------------------------------

    async def _recv(self, timeout: float) -> bytes | None:
        """Up to RECV_BYTES bytes; None when nothing came within ``timeout``; b"" at EOF."""
        for attempt in (1, 2):
            try:
                return self._raw.recv(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                if attempt == 2 or not await self._ready(self._loop().add_reader, timeout):
                    return None
            except OSError:
                return b""
        return None

    async def _ready(self, add: Callable[..., None], timeout: float) -> bool:
        """Wait until the socket is readable (``add_reader``) or writable (``add_writer``)."""
        if timeout <= 0 or self._closed:
            return False
        loop, fd = self._loop(), self._raw.fileno()
        if fd < 0:
            return False
        ready = loop.create_future()
        add(fd, lambda: ready.done() or ready.set_result(None))
        remove = loop.remove_reader if add == loop.add_reader else loop.remove_writer
        try:
            async with asyncio.timeout(timeout):
                await ready
            return True
        except TimeoutError:
            return False
        finally:
            remove(fd)

    @staticmethod
    def _loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    # -- the thread pool's way --------------------------------------------------------------

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _recv_blocking(self, timeout: float) -> bytes | None:
        raw = self._raw
        if self._closed:
            return b""
        buffered = isinstance(raw, ssl.SSLSocket) and raw.pending()
        if not buffered and not readable(raw, timeout):
            return None
        try:
            return raw.recv(RECV_BYTES)
        except (TimeoutError, BlockingIOError, ssl.SSLWantReadError):
            return None
        except OSError:
            return b""

    def _send_blocking(self, data: bytes, deadline: float) -> bool:
        raw, view = self._raw, memoryview(data)
        old = raw.gettimeout()
        try:
            while view:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                raw.settimeout(left)
                view = view[raw.send(view[:RECV_BYTES]) :]
        except TimeoutError:
            return False
        except OSError as e:
            raise ConnectionError(f"the exec stream is gone: {e}") from e
        finally:
            with contextlib.suppress(OSError):
                raw.settimeout(old)
        return True


class DockerExecTransport:
    """Starts processes in one container through the Engine API
    (an :class:`~services.sandbox.framing.ExecTransport`)."""

    def __init__(
        self,
        api: APIClient,
        container_id: str,
        executor: Executor,
        *,
        threaded: bool | None = None,
    ) -> None:
        self._api = api
        self._container_id = container_id
        self._executor = executor
        self._threaded = threaded

    async def open(self, argv: Sequence[str]) -> DockerExecStream:
        sock = await self._in_thread(self._start, list(argv))
        return DockerExecStream(sock, self._executor, threaded=self._threaded)

    async def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        code, out = await self._in_thread(
            run_to_end, self._api, self._container_id, list(argv), EXEC_DEADLINE, env
        )
        if code != 0:
            said = out.decode("utf-8", "replace").strip()[-300:]
            name = argv[3] if len(argv) > 3 else argv[0]  # sh -c SCRIPT NAME ...: its name
            raise ExecFailed(f"{name} failed (exit {code}): {said}", exit_code=code)

    def _start(self, argv: list[str]) -> Any:
        exec_id = create_exec(self._api, self._container_id, argv, stdin=True)
        try:
            return self._api.exec_start(exec_id, socket=True)
        except ENGINE_ERRORS as e:
            raise engine_error(e, "cannot start a shell session") from e

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)


def create_exec(api: APIClient, container_id: str, cmd: list[str], **kwargs: Any) -> str:
    """A new exec of ``cmd`` in the container, as root (the container's user: green creates
    them with none). Raises SandboxError (EngineUnreachable when the engine does not answer)."""
    try:
        return api.exec_create(container_id, cmd, user="0", **kwargs)["Id"]
    except docker.errors.NotFound as e:
        raise SandboxError(f"the container is gone: {e.explanation}") from e
    except docker.errors.APIError as e:  # 409: not running
        raise SandboxError(f"cannot exec in the container: {e.explanation}") from e
    except ENGINE_ERRORS as e:
        raise engine_error(e, "cannot exec in the container") from e


def run_to_end(
    api: APIClient,
    container_id: str,
    argv: list[str],
    timeout: float,
    env: Mapping[str, str] | None = None,
    keep: int = 1 << 16,
    start_tries: int = 1,
) -> tuple[int | None, bytes]:
    """Run ``argv`` as root in the container to its end, within ``timeout`` seconds (blocking):
    its exit code (None when the engine could not say) and the last ``keep`` bytes of its
    output, stdout and stderr together. Its programs are looked up on :data:`SYSTEM_PATH`
    unless ``env`` says otherwise. Raises ExecFailed (``stalled``) when it is still running at
    the deadline: green stops waiting and leaves it to the container (the caller decides
    whether to kill that). The engine's own calls are bounded by its client's timeout, and
    their failures are SandboxError (EngineUnreachable). With ``start_tries`` (green's own
    set-up execs, :data:`START_TRIES`), a process the runtime failed to start (nothing of it
    ran) is started again within the deadline; never the kill, whose failure to start says
    the container is going, which the caller must learn at once."""
    deadline = time.monotonic() + timeout
    for _ in range(start_tries - 1):
        code, out = _run_once(api, container_id, argv, deadline, timeout, env, keep)
        if not never_started(code, out):
            return code, out
        time.sleep(START_RETRY_S)  # the runtime failed to start it: nothing ran, so again
    return _run_once(api, container_id, argv, deadline, timeout, env, keep)


def run_setup(
    api: APIClient, container_id: str, argv: list[str], timeout: float
) -> tuple[int | None, bytes]:
    """:func:`run_to_end` for green's own set-up execs (a folder made, the tree prepared):
    started again, up to :data:`START_TRIES` times, when the runtime failed to start them."""
    return run_to_end(api, container_id, argv, timeout, start_tries=START_TRIES)


START_TRIES = 3
"""Tries of a set-up exec whose process the runtime failed to start (:func:`never_started`)."""
START_RETRY_S = 0.5
_NEVER_STARTED = re.compile(rb"^OCI runtime exec failed: .*unable to start container process")


def never_started(code: int | None, out: bytes) -> bool:
    """Whether an exec's answer is the runtime's failure to start its process (``runc init``
    lost under load: "read init-p: connection reset by peer"): nothing of it ran."""
    return code not in (None, 0) and bool(_NEVER_STARTED.match(out))


def _run_once(
    api: APIClient,
    container_id: str,
    argv: list[str],
    deadline: float,
    timeout: float,
    env: Mapping[str, str] | None,
    keep: int,
) -> tuple[int | None, bytes]:
    exec_id = create_exec(api, container_id, argv, environment={"PATH": SYSTEM_PATH, **(env or {})})
    try:
        sock = api.exec_start(exec_id, socket=True)
    except ENGINE_ERRORS as e:
        raise engine_error(e, "cannot run in the container") from e
    raw: Any = getattr(sock, "_sock", sock)
    frames, out = FrameDecoder(), bytearray()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ExecFailed(f"{argv[0]} did not end within {timeout:g} s", stalled=True)
            buffered = isinstance(raw, ssl.SSLSocket) and raw.pending()
            if not buffered and not readable(raw, left):
                continue
            try:
                data = raw.recv(RECV_BYTES)
            except (TimeoutError, BlockingIOError, InterruptedError, ssl.SSLWantReadError):
                continue
            except OSError:
                break
            if not data:
                break
            for _, piece in frames.feed(data):
                out += piece
                del out[:-keep]
    finally:
        for s in (sock, raw):
            with contextlib.suppress(OSError):
                s.close()
    return _exit_code(api, exec_id, deadline), bytes(out)


EXIT_CODE_WAIT_S = 0.2
"""Seconds an exec's exit code is waited for at least, past its deadline if need be."""


def _exit_code(api: APIClient, exec_id: str, deadline: float) -> int | None:
    """The exit code of an exec whose output ended. The engine records it a moment later, and
    under load that moment can be long (a set-up exec read as failed, with no output, once in
    CI): it is waited for until the exec's ``deadline`` (at least :data:`EXIT_CODE_WAIT_S`);
    None when the engine still has none then."""
    until = max(deadline, time.monotonic() + EXIT_CODE_WAIT_S)
    pause = 0.01
    while True:
        try:
            state = api.exec_inspect(exec_id)
        except ENGINE_ERRORS as e:
            raise engine_error(e, "cannot ask how a process in the container ended") from e
        if not state.get("Running") and state.get("ExitCode") is not None:
            return int(state["ExitCode"])
        if time.monotonic() >= until:
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def readable(sock: socket.socket, timeout: float) -> bool:
    """Whether ``sock`` has data (or EOF) within ``timeout`` seconds. poll(), not select(): a
    green with many connections has descriptors above select()'s limit of 1024."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(timeout, 0.0) * 1000))
