"""Run real services for tests: an ASGI app on 127.0.0.1 in a thread, or a service in a subprocess."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import httpx
import uvicorn

from tests.support import web

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThreadedServer:
    """uvicorn in a background thread, lifespan included (startup and shutdown really run)."""

    def __init__(self, app, port: int | None = None, config: uvicorn.Config | None = None) -> None:
        """``config``: a service's own uvicorn configuration (green's protocol and limits, say),
        which names the host and port; by default uvicorn's, on 127.0.0.1:``port``."""
        if config is None:
            config = uvicorn.Config(
                app, host="127.0.0.1", port=port or free_port(), log_level="warning", lifespan="on"
            )
        self.port = config.port
        self.url = f"http://{config.host}:{self.port}"
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop and wait for the server; a server still draining after 60 s is given up on, with
        a warning in pytest's summary (a connection something left open: a test's waste)."""
        self.server.should_exit = True
        self.thread.join(timeout=60)
        if self.thread.is_alive():
            warnings.warn(f"the server on {self.url} did not stop within 60 s", stacklevel=2)


@contextlib.contextmanager
def serve(
    app, port: int | None = None, config: uvicorn.Config | None = None
) -> Iterator[ThreadedServer]:
    srv = ThreadedServer(app, port, config).start()
    try:
        yield srv
    finally:
        srv.stop()


class ServiceProcess:
    """``python -m services.<name>`` in a subprocess (for kill/restart tests)."""

    def __init__(self, module: str, port: int, env: dict[str, str], log_path: Path) -> None:
        self.module, self.port, self.env, self.log_path = module, port, env, log_path
        self.url = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60) -> ServiceProcess:
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", self.module, "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=REPO,
            env={**os.environ, **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.module} exited: {self.log_path.read_text()[-2000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if web.get(f"{self.url}/.well-known/agent-card.json", timeout=1).status_code == 200:
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"{self.module} did not start: {self.log_path.read_text()[-2000:]}")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
