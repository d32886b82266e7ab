"""A unix-socket forwarder to the Docker engine that a test can cut, restore or slow down.

Point a docker client (or green, through ``DOCKER_HOST=unix://<path>``) at :attr:`url`;
:meth:`stop` removes the socket and cuts every open connection (the engine is unreachable:
connections are refused, hijacked exec streams end), :meth:`start` serves again, and
:meth:`drop` cuts the open connections only. :attr:`delay`
holds back each request the engine is sent by the seconds it returns for the request's first
bytes (``b"DELETE /v1.41/images/..."``): a loaded engine, as its clients see it. The machine's
engine itself is never touched, so other tests using it are not disturbed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

ENGINE_SOCKET = "/var/run/docker.sock"


class DockerProxy:
    def __init__(self, path: Path, target: str = ENGINE_SOCKET) -> None:
        self.path = str(path)
        self.target = target
        self._listener: socket.socket | None = None
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self.delay: Callable[[bytes], float] = lambda request: 0.0
        """Seconds to hold back a request to the engine, by its first bytes."""

    @property
    def url(self) -> str:
        return f"unix://{self.path}"

    def start(self) -> DockerProxy:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.path)
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self.drop()

    def drop(self) -> None:
        """Cut every open connection (hijacked exec streams end) and go on serving new ones."""
        with self._lock:
            conns, self._conns = self._conns, set()
        for c in conns:
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:  # stopped meanwhile
                    client.close()
                    upstream.close()
                    return
                self._conns |= {client, upstream}
            done = threading.Barrier(2, action=lambda c=client, u=upstream: self._close(c, u))
            for src, dst, slow in ((client, upstream, True), (upstream, client, False)):
                threading.Thread(
                    target=self._pump, args=(src, dst, done, slow), daemon=True
                ).start()

    def _pump(
        self, src: socket.socket, dst: socket.socket, done: threading.Barrier, slow: bool = False
    ) -> None:
        try:
            while data := src.recv(1 << 16):
                if slow and (seconds := self.delay(data)) > 0:
                    time.sleep(seconds)
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(threading.BrokenBarrierError):
            done.wait()

    def _close(self, *socks: socket.socket) -> None:
        with self._lock:
            self._conns -= set(socks)
        for s in socks:
            s.close()
