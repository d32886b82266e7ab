"""A long-lived shell inside a sandbox, framed over any async byte stream to one process.

Why a session
    Commands are the agent's inner loop. A new process per command costs 35-60 ms on Docker
    (an API round trip plus runc setting up a process); a shell that stays attached answers in
    about a millisecond. It needs nothing inside the container (no server, no port, no
    network): :class:`ShellSession` writes to the stdin of one process and reads its stdout and
    stderr. How that process is started and reached is the transport's business
    (:class:`ExecTransport`, :class:`ExecStream`): the Docker exec socket
    (:mod:`services.sandbox.docker.transport`) is one; a Kubernetes exec websocket would be
    another. Nothing here knows Docker.

Framing
    The process runs :data:`~.shell_scripts.BOOT`, which reads
    :data:`~.shell_scripts.DRIVER` (a small POSIX ``sh`` loop) from stdin. Green then sends,
    per command, a ``<nonce> <k>`` line and the command as ``k`` raw lines
    (:func:`~.shell_scripts.frame_lines`); ``IFS= read -r`` reads them back verbatim, so
    quotes, backslashes, newlines or heredocs cannot break the framing. The driver acknowledges
    (``<nonce>:ack``) on *its own* stderr, starts the command in a bash of its own (``sh`` when
    the image has no bash; in a container, the bash it started ahead as the previous command
    ended, see :mod:`~.shell_scripts`) in ``workdir`` with stdin from ``/dev/null`` and stderr
    merged into stdout, reports the command's process group (``<nonce>:sid <id>``) on stderr too
    (a separate stream, so these lines never mix with the command's output), prints
    ``<nonce>:go`` on stdout, waits for the command, prints ``<nonce> <exit status>`` on stdout,
    and then kills whatever the command left behind before it reads the next one. The command's
    output travels between the two stdout lines, so what lies between them is the command's and
    nothing else (bytes a dying process printed after the last end marker come before the next
    ``go``). The nonce is 128 random bits, new for every command, held by a driver the agent's
    processes (another uid) cannot read: output cannot forge it.

One process group per command
    The command leads a process group of its own (a bash job, ``set -m``; ``setsid``, a session
    too, where the image has no bash or outside a container); background jobs, pipelines and
    subshells stay in it. After the command exits, the driver kills
    whatever it left: in an agent's container with ``kill -KILL -1`` run as the agent's uid
    (every process of the agent and none of green's, in one pass of the kernel that no fork can
    outrun), in green's own with ``kill -KILL -1`` from the driver (before it reports the end:
    that kill would end green's next exec too), elsewhere by sweeping that session and group
    through ``/proc`` (:data:`~.shell_scripts.SWEEP`). Nothing the agent starts outlives its
    command into the next one.

Timeouts
    The clock starts before the command is sent: a driver that has not taken the whole command
    by the deadline is abandoned, the command never ran, and the result is a timeout. At the
    deadline :data:`~.shell_scripts.KILLER` runs as a separate short process of root's (the
    driver, blocked in ``wait``, cannot be asked), within the transport's deadline. In an
    agent's container it kills every process but pid 1, the driver too, and the next command
    opens a new session. In green's own it sweeps the command's group and, in case its id was
    not reported yet, the session of every child of the driver; the driver's ``wait`` then
    returns, it prints the end marker, the stream is drained up to it and the session is reused
    (if the driver does not report back within :data:`DRAIN_TIMEOUT`, the session is abandoned
    as above). A kill that does not run to its end in time raises
    :class:`~services.sandbox.base.ExecFailed`: the sandbox decides whose doing that was.

Session loss
    When the stream ends mid-command (the command killed the driver, say), every process left
    in the container is killed and the result is ``exit_code=-1`` with a note. When it ends before the
    driver acknowledged the command, the command never ran and :class:`SessionLost` lets the
    sandbox resend it on a new session. When the container itself is gone, the transport raises
    :class:`~services.sandbox.base.SandboxError`.

Bounded memory
    Stdout goes to an :class:`~services.sandbox.output.OutputCapture` that keeps only the head
    and tail, so a command printing gigabytes costs green a few hundred kilobytes.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Protocol

from services.sandbox.base import ExecFailed, SandboxError, SandboxTimeout
from services.sandbox.output import OutputCapture
from services.sandbox.shell_scripts import BOOT, DRIVER, KILLER, frame_lines
from services.shared.commands import CommandResult

STDOUT, STDERR = 1, 2
KILLED = 128 + 9
"""The exit status of a process killed by SIGKILL."""
HANDSHAKE_TIMEOUT = 15.0
"""Seconds for a new session to answer its first line."""
DRAIN_TIMEOUT = 10.0
"""Seconds the driver may take to report the end of a command after it was killed."""

Pieces = list[tuple[int, bytes]]
"""What a stream delivered: (channel, bytes) pieces, channel :data:`STDOUT` or :data:`STDERR`."""


class ExecStream(Protocol):
    """The stdin, stdout and stderr of one process in a sandbox, as an async byte stream."""

    async def send(self, data: bytes, timeout: float) -> bool:
        """Write all of ``data``; False when the process did not take it all within
        ``timeout`` seconds. Raises ConnectionError when the stream is gone."""
        ...

    async def receive(self, timeout: float) -> Pieces | None:
        """What arrived: None when nothing came within ``timeout`` seconds, ``[]`` at the end
        of the stream (the process or the connection ended)."""
        ...

    def abort(self) -> None:
        """Shut the stream down now, from any coroutine or thread: a pending :meth:`receive`
        sees the end."""
        ...

    def close(self) -> None:
        """Release the stream (the process reads EOF on stdin). Idempotent."""
        ...


class ExecTransport(Protocol):
    """Starts processes in one sandbox."""

    async def open(self, argv: Sequence[str]) -> ExecStream:
        """Start ``argv`` with stdin attached. Raises SandboxError."""
        ...

    async def run(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> None:
        """Run ``argv`` as root to its end, output ignored, within the transport's deadline.
        Raises ExecFailed when it did not end in time or failed, SandboxError when the sandbox
        or its engine did."""
        ...


class SessionLost(Exception):
    """The session was found dead before the command started: opening a new one and sending
    the command again is safe."""


class SessionNotStarted(SandboxError):
    """A session's process was started but never answered its first line: it died or hung
    inside the sandbox (the transport's own failures are other SandboxErrors)."""


class SessionNotAnswering(SessionNotStarted, SandboxTimeout):
    """:class:`SessionNotStarted` because it did not answer in time."""


class MarkerScanner:
    """Splits a stream into content and a final marker line ``<token> <value>\\n``.

    Content goes to ``sink`` as it arrives, except the last ``len(token) - 1`` bytes, which
    might be the start of the marker; after the marker, :attr:`value` is set, the bytes that
    followed it in the same piece are :attr:`rest`, and later bytes are ignored.
    """

    def __init__(self, token: str, sink: OutputCapture) -> None:
        self._token = token.encode() + b" "
        self._sink = sink
        self._pending = bytearray()
        self.value: bytes | None = None
        self.rest = b""

    def feed(self, data: bytes) -> None:
        if self.value is not None:
            return
        self._pending += data
        start = self._pending.find(self._token)
        if start < 0:
            flush = len(self._pending) - (len(self._token) - 1)
        else:
            end = self._pending.find(b"\n", start)
            if end >= 0:
                self._sink.feed(self._pending[:start])
                self.value = bytes(self._pending[start + len(self._token) : end])
                self.rest = bytes(self._pending[end + 1 :])
                self._pending.clear()
                return
            flush = start
        if flush > 0:
            self._sink.feed(self._pending[:flush])
            del self._pending[:flush]

    def flush(self) -> None:
        """The stream ended without a marker: what was held back is content after all."""
        self._sink.feed(self._pending)
        self._pending.clear()


class _Command:
    """The scanners of one running command: its start, output and end marker on stdout (what
    came before the start is a dead command's), its ack and its sid on stderr."""

    def __init__(self, output_limit: int) -> None:
        self.nonce = secrets.token_hex(16)
        self.capture = OutputCapture(output_limit)
        self.go = MarkerScanner(f"{self.nonce}:go", OutputCapture(0))  # its output follows
        self.stdout = MarkerScanner(self.nonce, self.capture)
        self.ack = MarkerScanner(f"{self.nonce}:ack", OutputCapture(0))  # it is starting
        self.sid = MarkerScanner(f"{self.nonce}:sid", OutputCapture(0))  # its session id
        self.start = time.monotonic()

    def feed(self, pieces: Pieces) -> None:
        for channel, payload in pieces:
            if channel == STDOUT:
                if self.go.value is None:
                    self.go.feed(payload)
                    if self.go.value is None:
                        continue
                    payload, self.go.rest = self.go.rest, b""
                self.stdout.feed(payload)
            else:
                self.ack.feed(payload)
                self.sid.feed(payload)

    def result(self, exit_code: int, *, timed_out: bool, note: str = "") -> CommandResult:
        output = self.capture.text()
        if note:
            output += ("\n" if output and not output.endswith("\n") else "") + note + "\n"
        return CommandResult(
            exit_code=exit_code,
            output=output,
            truncated=self.capture.bytes_cut > 0,
            bytes_cut=self.capture.bytes_cut,
            timed_out=timed_out,
            duration_s=time.monotonic() - self.start,
        )


class ShellSession:
    """One driver shell in one sandbox. Not safe for concurrent commands: the sandbox
    serializes them; :meth:`abort` may be called at any time.

    ``uid``: the commands run as this uid and gid, with nothing of root's (``setpriv``); the
    driver, the kill and the cleanup stay root's, out of their reach. None: as the driver's own
    user. ``home``: the commands' ``HOME`` under ``uid``."""

    def __init__(
        self,
        transport: ExecTransport,
        workdir: str,
        *,
        uid: int | None = None,
        home: str = "/home/agent",
    ) -> None:
        self._transport = transport
        self._workdir = workdir
        self._uid = uid
        self._home = home
        self._stream: ExecStream | None = None
        self.driver_pid = ""
        self.shell = ""
        """``bash``, or ``sh`` when the image has no bash."""

    @property
    def alive(self) -> bool:
        return self._stream is not None

    async def open(self, hand_over: Sequence[str] = ()) -> None:
        """Start the driver and wait for its handshake; with a ``uid``, the driver first makes
        ``hand_over`` (paths) that uid's, recursively: pass them before the agent's first
        command only. Raises SandboxError from the transport, SessionNotStarted when the driver
        dies before it answers (the image lacks ``setpriv``, say; SessionNotAnswering, a
        SandboxTimeout, when it does not answer in time)."""
        uid = "" if self._uid is None else str(self._uid)
        paths = list(hand_over) if uid else []
        self._stream = await self._transport.open(
            ["/bin/sh", "-c", BOOT, "arena-session", self._workdir, uid, self._home, *paths]
        )
        # The driver is silent until it reads this line, so nothing it prints can be swallowed
        # by a transport still setting the stream up.
        nonce = secrets.token_hex(8)
        seen = OutputCapture(4096)
        hello = MarkerScanner(nonce, seen)
        deadline = time.monotonic() + HANDSHAKE_TIMEOUT
        try:
            await self._send(frame_lines(DRIVER) + f"{nonce}\n".encode(), HANDSHAKE_TIMEOUT)
            while hello.value is None and (left := deadline - time.monotonic()) > 0:
                pieces = await self._receive(left)
                if pieces == []:
                    break
                for _, payload in pieces or []:
                    hello.feed(payload)  # stderr too: the driver's errors explain a failure
        except SessionLost:
            pass
        if hello.value is None:
            self.close()
            said = seen.text().strip()
            if time.monotonic() >= deadline:
                raise SessionNotAnswering(f"the shell session did not answer in time: {said!r}")
            raise SessionNotStarted(f"the shell session did not start: {said!r}")
        self.driver_pid, self.shell = hello.value.decode().split()

    def close(self) -> None:
        """Close the stream; the driver reads EOF and exits. Idempotent."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abort()
            stream.close()

    def abort(self) -> None:
        """Shut the stream down (safe at any time): a command waiting on it sees its end."""
        if self._stream is not None:
            self._stream.abort()

    async def run(self, command: str, timeout: float, output_limit: int) -> CommandResult:
        """Run one command. Raises SessionLost when the session was already dead (the command
        did not run), SandboxError when the container is gone."""
        await self._discard_stale_output()
        cmd = _Command(output_limit)
        deadline = cmd.start + max(timeout, 0.0)  # sending counts: a slow reader cannot stretch it
        if not await self._send(cmd.nonce.encode() + b" " + frame_lines(command), timeout):
            await self._kill(None, abandon=True)  # the driver holds half a command: drop it
            self.close()
            note = "[the command could not be sent within its timeout; it did not run]"
            return cmd.result(-1, timed_out=True, note=note)
        timed_out = False
        while cmd.stdout.value is None:
            now = time.monotonic()
            if now >= deadline:
                if timed_out:  # killed, yet the driver never reported back: drop the session
                    await self._kill(cmd.sid.value, abandon=True)
                    self.close()
                    cmd.stdout.flush()
                    break
                await self._kill(cmd.sid.value)
                timed_out, deadline = True, now + DRAIN_TIMEOUT
                if self._uid is not None:  # the driver died with the command: a new session
                    self.close()
                    cmd.stdout.flush()
                    break
                continue
            pieces = await self._receive(deadline - now)
            if pieces is None:
                continue
            if not pieces:
                cmd.stdout.flush()
                if cmd.ack.value is None:
                    self.close()
                    raise SessionLost("the shell session ended before the command started")
                return await self._lost(cmd, timed_out)
            cmd.feed(pieces)
        exit_code = -1 if timed_out or cmd.stdout.value is None else int(cmd.stdout.value)
        return cmd.result(exit_code, timed_out=timed_out)

    async def _lost(self, cmd: _Command, timed_out: bool) -> CommandResult:
        """The stream ended mid-command: the driver died (killed by the command, or the
        container stopped). Kill what the command left, report it, reopen next time."""
        self.close()
        # the driver is gone: kill everything else too (raises SandboxError when the container is)
        await self._kill(cmd.sid.value, abandon=True)
        note = "[the shell session ended before the command finished; its processes were killed]"
        return cmd.result(-1, timed_out=timed_out, note=note)

    async def _kill(self, sid: bytes | None, *, abandon: bool = False) -> None:
        """Kill the running command with a separate short process of root's: session ``sid``
        if known, and every child session of the driver; with ``abandon``, or where commands
        run as an agent's ``uid``, every process but pid 1 (the driver too: its session is
        replaced), with one ``kill -KILL -1`` that forks nothing and that no process of the
        agent can signal, stop or outrun. Raises ExecFailed (the session closed) when that
        process did not run to its end in time."""
        abandon = abandon or self._uid is not None
        env = {"ABANDON": "1"} if abandon else None
        argv = ["/bin/sh", "-c", KILLER, "arena-kill", self.driver_pid, (sid or b"").decode()]
        try:
            await self._transport.run(argv, env)
        except ExecFailed as e:
            if e.exit_code == KILLED:  # by the driver's own cleanup, which kills the same
                return
            self.close()  # the command may run on: nothing here can stop it
            raise

    async def _send(self, data: bytes, timeout: float) -> bool:
        stream = self._stream
        if stream is None:
            raise SessionLost("the shell session is closed")
        try:
            return await stream.send(data, timeout)
        except OSError as e:
            self.close()
            raise SessionLost(f"the shell session is gone: {e}") from e

    async def _receive(self, timeout: float) -> Pieces | None:
        stream = self._stream
        if stream is None:
            return []
        return await stream.receive(timeout)

    async def _discard_stale_output(self) -> None:
        """Drop bytes that arrived between commands; notice a session that died meanwhile."""
        while (pieces := await self._receive(0)) is not None:
            if not pieces:
                self.close()
                raise SessionLost("the shell session ended between commands")
