"""A long-lived shell inside a task container, attached through the Docker API's exec stream.

Why a session
    Commands are the agent's inner loop. A ``docker exec`` per command costs 35-60 ms (an API
    round trip plus runc setting up a process); a shell that stays attached to one exec answers
    in about a millisecond. It needs nothing inside the container (no server, no port, no
    network): :class:`ShellSession` talks to it over the hijacked HTTP connection of one
    ``exec_start``, writing to its stdin and reading Docker's multiplexed stdout/stderr frames.

Framing
    The exec runs :data:`BOOT`, which reads :data:`DRIVER` (a small POSIX ``sh`` loop) from
    stdin. Green then sends, per command, a ``<nonce> <k>`` line and the command as ``k`` raw
    lines (:func:`frame_lines`); ``IFS= read -r`` reads them back verbatim, so quotes,
    backslashes, newlines or heredocs cannot break the framing, and no decoder process is
    needed. The driver acknowledges (``<nonce>:ack``) on *its own* stderr, starts
    ``setsid bash -c "$cmd"`` (``sh`` when the image has no bash) in ``workdir`` with stdin
    from ``/dev/null`` and stderr merged into stdout, reports the command's session id
    (``<nonce>:sid <sid>``) on its stderr too (a separate stream, so these lines never mix with
    the command's output), waits for it, kills whatever it left behind, and prints
    ``<nonce> <exit status>`` on stdout. That end marker travels through the same pipe as the
    output, so everything before it belongs to the command. The nonce is 128 random bits, new
    for every command: output cannot forge it, and stray bytes of an earlier command are never
    taken for this one's marker.

One session per command
    ``setsid`` makes the command the leader of a new session and process group whose id is its
    pid; background jobs, pipelines and subshells stay in it. After the command exits,
    :data:`SWEEP` SIGKILLs every process of that session or group, and every orphan that left
    its session with its own ``setsid`` (adopted by the container's init), repeating until
    none is left, so nothing can print into the next command's output. It reads ``/proc``, so
    the image needs no procps.

Timeouts
    The clock starts before the command is sent: a driver that has not taken the whole command
    by the deadline (it is stopped, or the command is huge) is abandoned, the command never
    ran, and the result is a timeout. The caller enforces them: it reads the stream with
    ``select`` until the deadline, then
    runs :data:`KILLER` in a separate short ``docker exec`` (the driver, blocked in ``wait``,
    cannot be asked). That script sweeps the command's session and,
    in case its id was not reported yet, the session of every child of the driver. The
    driver's ``wait`` then returns, it prints the end marker, green drains the stream up to it
    and the session is reused. If the driver does not report back within
    :data:`DRAIN_TIMEOUT`, the session is abandoned (driver killed too) and the next command
    opens a new one.

Session loss
    When the stream ends mid-command (the command killed the driver, say), the command's
    processes are swept and the result is ``exit_code=-1`` with a note; the next command opens
    a new session. When it ends before the driver acknowledged the command, the command never
    ran and :class:`SessionLost` lets the sandbox resend it on a new session. When the
    container itself is gone, :class:`SandboxError` is raised.

Bounded memory
    Frames are demultiplexed incrementally from the raw socket; stdout goes to an
    :class:`~services.green.sandbox.output.OutputCapture` that keeps only the head and tail, so
    a command printing gigabytes costs green a few hundred kilobytes.
"""

from __future__ import annotations

import contextlib
import secrets
import select
import socket
import ssl
import struct
import time
from typing import Any

import docker.errors
from docker import APIClient

from services.green.sandbox.base import SandboxError
from services.green.sandbox.engine import ENGINE_ERRORS
from services.green.sandbox.output import OutputCapture
from services.shared.commands import CommandResult

STDOUT, STDERR = 1, 2
RECV_BYTES = 1 << 18
HANDSHAKE_TIMEOUT = 15.0
"""Seconds for a new session to answer its first line."""
DRAIN_TIMEOUT = 10.0
"""Seconds the driver may take to report the end of a command after it was killed."""

SWEEP = r"""
# Orphans are swept only where this script runs as a `docker exec` process: its parent lives
# outside the container's pid namespace, so $PPID is 0. Anywhere else (a host, a shared pid
# namespace) processes adopted by pid 1 are not ours, and the rule stays off.
[ "$PPID" = 0 ] && _orphans=1 || _orphans=
sweep() {  # SIGKILL, until none is left, every process of group or session $1, and (in a
  # container) every orphan that left its session: parent pid 1, session not pid 1's (the
  # keeper, pid 1, and its `sleep` child are in pid 1's session).
  _t=$1 _i=0
  case $_t in '' | 0 | 1) return 0 ;; esac
  while [ "$_i" -lt 200 ]; do
    _f=
    for _s in /proc/[0-9]*/stat; do
      { read -r _l <"$_s"; } 2>/dev/null || continue
      set -- ${_l##*") "}  # the fields after the command name: state ppid pgrp session ...
      case $1 in Z | X) continue ;; esac
      if [ "$3" = "$_t" ] || [ "$4" = "$_t" ] || { [ -n "$_orphans" ] && [ "$2" = 1 ] && [ "$4" != 1 ]; }; then
        _p=${_s#/proc/}; kill -KILL "${_p%/stat}" 2>/dev/null; _f=1
      fi
    done
    [ -z "$_f" ] && return 0
    _i=$((_i + 1))
  done
}
"""

BOOT = 'read -r k; d=; while [ "$k" -gt 0 ]; do IFS= read -r l; d="$d$l\n"; k=$((k-1)); done; eval "$d"'
"""What the session exec runs (and ``ps`` shows): it reads :data:`DRIVER` from stdin, framed
like a command, so the long script stays out of the process list."""

DRIVER = (
    SWEEP
    + r"""
W=$1
S=sh; command -v bash >/dev/null 2>&1 && S=bash
command -v setsid >/dev/null 2>&1 || { echo "arena: the image has no setsid" >&2; exit 3; }
IFS= read -r n || exit 0
printf '%s %s %s\n' "$n" "$$" "$S"
while read -r n k; do
  c=
  while [ "$k" -gt 0 ]; do IFS= read -r l || exit 0; c="$c$l
"; k=$((k - 1)); done
  cd "$W" 2>/dev/null || cd /
  printf '%s:ack 1\n' "$n" >&2
  setsid "$S" -c "$c" </dev/null 2>&1 &
  p=$!
  printf '%s:sid %s\n' "$n" "$p" >&2
  wait "$p"; r=$?
  cd /
  sweep "$p"
  printf '%s %s\n' "$n" "$r"
done
"""
)
"""The session loop (POSIX sh, run by ``/bin/sh``). ``$1``: the commands' working directory.
Protocol: a ``<nonce>`` line, answered ``<nonce> <pid> <shell>``; then per command a
``<nonce> <k>`` line and the command as ``k`` raw lines, answered ``<nonce>:ack 1`` and
``<nonce>:sid <sid>`` on stderr, the command's output and ``<nonce> <status>`` on stdout."""

KILLER = (
    SWEEP
    + r"""
[ -n "$2" ] && sweep "$2"
for s in /proc/[0-9]*/stat; do
  { read -r l <"$s"; } 2>/dev/null || continue
  set -- "$1" ${l##*") "}
  if [ "$3" = "$1" ]; then q=${s#/proc/}; sweep "${q%/stat}"; fi
done
[ -n "$ABANDON" ] && sweep "$1"
exit 0
"""
)
"""Kills a running command: ``$1`` the driver's pid, ``$2`` the command's session id (may be
empty). It also sweeps the session of every child of the driver, in case the id was not
reported yet. With ``ABANDON=1`` in the environment it kills the driver too."""


def frame_lines(text: str) -> bytes:
    """A ``<k>`` line, then ``text`` as ``k`` newline-terminated lines: read back verbatim by
    ``IFS= read -r`` in any POSIX shell, whatever quotes, backslashes or heredocs it holds.
    NUL bytes are dropped (no shell command can hold one)."""
    data = text.replace("\0", "").encode("utf-8", errors="surrogateescape") + b"\n"
    return b"%d\n" % data.count(b"\n") + data


class SessionLost(Exception):
    """The session was found dead before the command started: opening a new one and sending
    the command again is safe."""


class FrameDecoder:
    """Incremental decoder of Docker's multiplexed stream (``tty=False``).

    Each frame is an 8-byte header (stream id, 3 zero bytes, big-endian payload length) and
    the payload. Payload pieces are returned as soon as they arrive, never buffered whole.
    """

    def __init__(self) -> None:
        self._header = bytearray()
        self._stream = 0
        self._left = 0

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
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


class MarkerScanner:
    """Splits a stream into content and a final marker line ``<token> <value>\\n``.

    Content goes to ``sink`` as it arrives, except the last ``len(token) - 1`` bytes, which
    might be the start of the marker; after the marker, :attr:`value` is set and later bytes
    are ignored.
    """

    def __init__(self, token: str, sink: OutputCapture) -> None:
        self._token = token.encode() + b" "
        self._sink = sink
        self._pending = bytearray()
        self.value: bytes | None = None

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


class ShellSession:
    """One driver shell in one container. Not thread-safe: the sandbox serializes calls."""

    def __init__(self, api: APIClient, container_id: str, workdir: str) -> None:
        self._api = api
        self._container_id = container_id
        self._workdir = workdir
        self._sock: Any = None  # what docker-py returned (SocketIO, SSLSocket, ...)
        self._raw: Any = None  # the socket we select on
        self._frames = FrameDecoder()
        self.driver_pid = ""
        self.shell = ""
        """``bash``, or ``sh`` when the image has no bash."""

    @property
    def alive(self) -> bool:
        return self._raw is not None

    # -- lifecycle -------------------------------------------------------------------------

    def open(self) -> None:
        """Start the driver and wait for its handshake. Raises SandboxError."""
        exec_id = self._exec_create(
            ["/bin/sh", "-c", BOOT, "arena-session", self._workdir], stdin=True
        )
        try:
            self._sock = self._api.exec_start(exec_id, socket=True)
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot start a shell session: {e}") from e
        self._raw = getattr(self._sock, "_sock", self._sock)
        self._frames = FrameDecoder()
        # The driver is silent until it reads this line, so nothing it prints can be swallowed
        # by the HTTP client's read-ahead while the upgrade response was being parsed.
        nonce = secrets.token_hex(8)
        seen = OutputCapture(4096)
        hello = MarkerScanner(nonce, seen)
        try:
            self._send(frame_lines(DRIVER) + f"{nonce}\n".encode())
            deadline = time.monotonic() + HANDSHAKE_TIMEOUT
            while hello.value is None and (left := deadline - time.monotonic()) > 0:
                data = self._recv(left)
                if data == b"":
                    break
                for _, payload in self._frames.feed(data or b""):
                    hello.feed(payload)  # stderr too: the driver's errors explain a failure
        except SessionLost:
            pass
        if hello.value is None:
            self.close()
            raise SandboxError(f"the shell session did not start: {seen.text().strip()!r}")
        self.driver_pid, self.shell = hello.value.decode().split()

    def close(self) -> None:
        """Close the connection; the driver reads EOF and exits. Idempotent."""
        raw, sock, self._raw, self._sock = self._raw, self._sock, None, None
        if raw is None:
            return
        self.shutdown(raw)
        for s in (sock, raw):
            with contextlib.suppress(OSError):
                s.close()

    def shutdown(self, raw: Any = None) -> None:
        """Shut the connection down; safe from another thread (a blocked ``run`` sees EOF)."""
        raw = raw if raw is not None else self._raw
        if isinstance(raw, socket.socket):
            with contextlib.suppress(OSError):
                raw.shutdown(socket.SHUT_RDWR)

    # -- commands --------------------------------------------------------------------------

    def run(self, command: str, timeout: float, output_limit: int) -> CommandResult:
        """Run one command. Raises SessionLost when the session was already dead (the command
        did not run), SandboxError when the container is gone."""
        self._discard_stale_output()
        nonce = secrets.token_hex(16)
        capture = OutputCapture(output_limit)
        stdout = MarkerScanner(nonce, capture)
        ack = MarkerScanner(f"{nonce}:ack", OutputCapture(0))  # the command is starting
        sid = MarkerScanner(f"{nonce}:sid", OutputCapture(0))  # its session id
        start = time.monotonic()
        deadline = start + max(timeout, 0.0)  # sending counts: a slow reader cannot stretch it
        if not self._send_by(nonce.encode() + b" " + frame_lines(command), deadline):
            self._kill(None, abandon=True)  # the driver holds half a command: drop the session
            self.close()
            note = "[the command could not be sent within its timeout; it did not run]"
            return _result(-1, capture, start, timed_out=True, note=note)
        timed_out = False
        while stdout.value is None:
            now = time.monotonic()
            if now >= deadline:
                if timed_out:  # killed, yet the driver never reported back: drop the session
                    self._kill(sid.value, abandon=True)
                    self.close()
                    stdout.flush()
                    break
                self._kill(sid.value)
                timed_out, deadline = True, now + DRAIN_TIMEOUT
                continue
            data = self._recv(deadline - now)
            if data is None:
                continue
            if not data:
                stdout.flush()
                if ack.value is None:
                    self.close()
                    raise SessionLost("the shell session ended before the command started")
                return self._lost(sid.value, capture, start, timed_out)
            for stream, payload in self._frames.feed(data):
                if stream == STDOUT:
                    stdout.feed(payload)
                else:
                    ack.feed(payload)
                    sid.feed(payload)

        exit_code = -1 if timed_out or stdout.value is None else int(stdout.value)
        return _result(exit_code, capture, start, timed_out=timed_out)

    def _lost(
        self, sid: bytes | None, capture: OutputCapture, start: float, timed_out: bool
    ) -> CommandResult:
        """The stream ended mid-command: the driver died (killed by the command, or the
        container stopped). Kill what the command left, report it, reopen next time."""
        self.close()
        self._kill(sid)  # raises SandboxError when the container is gone
        note = "[the shell session ended before the command finished; its processes were killed]"
        return _result(-1, capture, start, timed_out=timed_out, note=note)

    def _kill(self, sid: bytes | None, *, abandon: bool = False) -> None:
        """Kill the running command (session ``sid`` if known, else every child session of
        the driver) with a separate short exec."""
        args = [self.driver_pid, (sid or b"").decode()]
        env = {"ABANDON": "1"} if abandon else None
        exec_id = self._exec_create(["/bin/sh", "-c", KILLER, "arena-kill", *args], environment=env)
        try:
            self._api.exec_start(exec_id)
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot kill the command: {e}") from e

    # -- socket ----------------------------------------------------------------------------

    def _exec_create(self, cmd: list[str], **kwargs: Any) -> str:
        try:
            return self._api.exec_create(self._container_id, cmd, **kwargs)["Id"]
        except docker.errors.NotFound as e:
            raise SandboxError(f"the container is gone: {e.explanation}") from e
        except docker.errors.APIError as e:  # 409: not running
            raise SandboxError(f"cannot exec in the container: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot exec in the container: the engine failed: {e}") from e

    def _send(self, data: bytes) -> None:
        if self._raw is None:
            raise SessionLost("the shell session is closed")
        try:
            self._raw.sendall(data)
        except OSError as e:
            self.close()
            raise SessionLost(f"the shell session is gone: {e}") from e

    def _send_by(self, data: bytes, deadline: float) -> bool:
        """Send ``data`` before ``deadline``; False when the driver did not take it all in
        time. Raises SessionLost when the connection is gone."""
        raw = self._raw
        if raw is None:
            raise SessionLost("the shell session is closed")
        view, old = memoryview(data), raw.gettimeout()
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
            self.close()
            raise SessionLost(f"the shell session is gone: {e}") from e
        finally:
            with contextlib.suppress(OSError):
                raw.settimeout(old)
        return True

    def _recv(self, timeout: float) -> bytes | None:
        """Up to RECV_BYTES bytes; None when nothing came within ``timeout``; b"" at EOF."""
        raw = self._raw
        if raw is None:
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

    def _discard_stale_output(self) -> None:
        """Drop bytes that arrived between commands; notice a session that died meanwhile."""
        while (data := self._recv(0)) is not None:
            if not data:
                self.close()
                raise SessionLost("the shell session ended between commands")
            self._frames.feed(data)


def _result(
    exit_code: int, capture: OutputCapture, start: float, *, timed_out: bool, note: str = ""
) -> CommandResult:
    output = capture.text()
    if note:
        output += ("\n" if output and not output.endswith("\n") else "") + note + "\n"
    return CommandResult(
        exit_code=exit_code,
        output=output,
        truncated=capture.bytes_cut > 0,
        bytes_cut=capture.bytes_cut,
        timed_out=timed_out,
        duration_s=time.monotonic() - start,
    )


def readable(sock: socket.socket, timeout: float) -> bool:
    """Whether ``sock`` has data (or EOF) within ``timeout`` seconds. poll(), not select(): a
    green with many connections has descriptors above select()'s limit of 1024."""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(max(timeout, 0.0) * 1000))
