"""Green's HTTP server: uvicorn, hardened against slow and numerous clients.

uvicorn closes idle keep-alive connections but never times out a request that is still being
sent, so a few thousand half-sent requests ("slowloris") hold green's file descriptors forever.
Green keeps uvicorn's own protocol and adds four things to it:

- a *read deadline*: a request's headers and body must arrive within
  ``GREEN_REQUEST_READ_TIMEOUT_S`` of its first byte (or of the connection's start), else the
  connection is closed;
- a *connection cap*: beyond ``GREEN_MAX_CONNECTIONS`` open connections a new one is closed at
  once, before it costs more than the accept; each connection is entered in
  :data:`services.green.edge.http_limits.BOOK`, which bounds the connections of each credential;
- a *lingering close*: a request refused while its body is still arriving (too big, too many
  connections) is answered, then the connection is half-closed and what the client goes on
  sending is read and dropped for up to ``LINGER_S`` (at most ``LINGER_BYTES``) before it is
  closed. Closed at once, a socket with unread data is reset by the kernel, which drops what
  was not yet sent of the answer: the client would miss the sentence that says why;
- *quiet logs*: the same server error (an accept failure, a malformed request) is logged at most
  once a minute, with a count of what was suppressed.

The open-file limit is raised to its hard maximum at start, so the cap, not the kernel, decides.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import time
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from services.green.config import GreenSettings
from services.green.edge.http_limits import BOOK

BACKLOG = 2048
"""Connections the kernel accepts and holds before green serves them (also during start-up)."""
LINGER_S = 2.0
"""How long a refused request's body is read and dropped after the answer (seconds)."""
LINGER_BYTES = 8 * 2**20
"""The most of it that is read and dropped: past that, the connection is closed."""


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: its ``close`` lingers while the client
    is still sending a body no one will read (:meth:`GuardedH11Protocol.close_lingering`)."""

    def __init__(self, transport: asyncio.Transport, protocol: GuardedH11Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def close(self) -> None:
        self._protocol.close_lingering()

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a per-request read deadline and a connection cap."""

    read_timeout_s: float = 30.0
    max_connections: int = 1024

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._read_deadline: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None
        self._dropped = 0
        self._raw = transport
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.close()
            return
        self.transport = _LingeringTransport(transport, self)  # type: ignore[assignment]
        BOOK.opened(self._book_key())  # its credential is bounded once it sends a request
        self._arm()  # a connection that never sends a byte is a request that never arrives

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._linger is not None:
            self._linger.cancel()
        BOOK.closed(self._book_key())
        super().connection_lost(exc)

    def _book_key(self) -> tuple[Any, Any]:
        return (self.server, self.client)

    def data_received(self, data: bytes) -> None:
        if self._linger is not None:  # the refused body: dropped
            self._dropped += len(data)
            if self._dropped > LINGER_BYTES:
                self._linger.cancel()
                self._raw.close()
            return
        super().data_received(data)
        self._watch()

    @property
    def lingering(self) -> bool:
        return self._linger is not None

    def close_lingering(self) -> None:
        """Close the connection; while the client is still sending the request's body, first
        half-close it (the answer, then end-of-file) and drop what arrives, for a while."""
        raw = self._raw
        if self._linger is not None or raw.is_closing():
            return
        if self.conn.their_state is h11.SEND_BODY and raw.can_write_eof():
            self._disarm()
            raw.write_eof()
            raw.resume_reading()  # uvicorn pauses reading a body no one reads
            self._linger = self.loop.call_later(LINGER_S, raw.close)
            return
        raw.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def _reading(self) -> bool:
        """A request has begun and has not yet fully arrived."""
        state = self.conn.their_state
        return state is h11.SEND_BODY or (state is h11.IDLE and bool(self.conn.trailing_data[0]))

    def _watch(self) -> None:
        if self._reading():
            if self._read_deadline is None:
                self._arm()
        else:
            self._disarm()

    def _arm(self) -> None:
        self._read_deadline = self.loop.call_later(self.read_timeout_s, self._too_slow)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _too_slow(self) -> None:
        self._read_deadline = None
        responding = self.cycle is not None and self.cycle.response_started
        if not responding and not self.transport.is_closing():
            self.transport.close()


class OncePerMinute(logging.Filter):
    """Lets a given message through at most once a minute; the next one says how many were
    dropped in between."""

    def __init__(self, period_s: float = 60.0) -> None:
        super().__init__()
        self.period_s = period_s
        self._seen: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = time.monotonic()
        last, dropped = self._seen.get(key, (float("-inf"), 0))
        if now - last < self.period_s:
            self._seen[key] = (last, dropped + 1)
            return False
        self._seen[key] = (now, 0)
        if dropped:
            record.msg = f"{record.msg} (and {dropped} more in the last minute, not logged)"
        return True


def quiet_server_logs() -> None:
    flood_guard = OncePerMinute()
    for name in ("asyncio", "uvicorn.error"):
        logging.getLogger(name).addFilter(flood_guard)


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard one; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        return hard
    return soft


def guarded_protocol(settings: GreenSettings) -> type[GuardedH11Protocol]:
    return type(
        "GreenH11Protocol",
        (GuardedH11Protocol,),
        {
            "read_timeout_s": settings.request_read_timeout_s,
            "max_connections": settings.max_connections,
        },
    )


def server_config(app: Any, settings: GreenSettings, **overrides: Any) -> uvicorn.Config:
    """The uvicorn configuration green runs with (also used by the tests' threaded servers)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "warning",
        "timeout_graceful_shutdown": 30,
        "http": guarded_protocol(settings),
        "backlog": BACKLOG,
    }
    return uvicorn.Config(app, **(options | overrides))


def before_drain(app: Any) -> None:
    """What green does at the first stop signal, before uvicorn drains its connections: it tells
    the orchestrator, so a task cut off by the shutdown (a command in flight, a task sent to
    purple while the drain waits) is recorded as an infra failure, not as the agent's."""
    app.state.orchestrator.begin_shutdown()


class GreenServer(uvicorn.Server):
    """uvicorn's server, which does :func:`before_drain` at the first signal."""

    def handle_exit(self, sig, frame) -> None:
        before_drain(self.config.app)
        super().handle_exit(sig, frame)


def bind(settings: GreenSettings) -> socket.socket:
    """The listening socket, bound and listening at once: connections wait in its backlog until
    green serves them (uvicorn serves on it as on its own).

    Its protocol is named (TCP): asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on
    the connections of a socket that says it is TCP. With it on, an answer written in two parts
    (uvicorn writes the headers, then the body) held its body until the client acknowledged
    the headers, which a client on a kept-alive connection does only after its delayed-ACK
    timer: every answer after a connection's first took about 40 ms more (httpx, ``arena run``,
    purple's calls of ``execute``)."""
    family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((settings.host, settings.port))
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def run(app: Any, settings: GreenSettings, sock: socket.socket | None = None) -> None:
    raise_open_file_limit()
    quiet_server_logs()
    GreenServer(server_config(app, settings)).run(sockets=[sock] if sock else None)
