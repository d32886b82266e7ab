"""Run real services for tests: an ASGI app on 127.0.0.1 in a thread, or a service in a process."""

from __future__ import annotations

import contextlib
import functools
import itertools
import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import random
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import uvicorn

from tests.support import web

REPO = Path(__file__).resolve().parents[2]


PORT_BAND = 2000
FIRST_PORT = 10000
"""Each pytest-xdist worker takes its ports from a band of its own, ``FIRST_PORT`` up: below the
kernel's ephemeral range (``ip_local_port_range``, 32768 on), whose ports it also hands to every
outgoing connection and every ``bind`` to port 0."""
_ports = itertools.count(random.randrange(PORT_BAND))


def _worker() -> int:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # gw0, gw1, ...
    return int(name[2:]) % ((32768 - FIRST_PORT) // PORT_BAND) if name[2:].isdigit() else 0


def free_port() -> int:
    """A port nothing listens on, for a server a test is about to start. A port the kernel
    chose (``bind`` to 0) could be chosen for another worker's server too, or for a connection,
    in the seconds before this one binds it, and a service that then fails to bind leaves the
    test talking to the other server (it answers the readiness check) until that one stops."""
    base = FIRST_PORT + PORT_BAND * _worker()
    for _ in range(PORT_BAND):
        port = base + next(_ports) % PORT_BAND
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {base}-{base + PORT_BAND - 1}")


class ThreadedServer:
    """uvicorn in a background thread, lifespan included (startup and shutdown really run)."""

    def __init__(
        self,
        app,
        port: int | None = None,
        config: uvicorn.Config | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        """``config``: a service's own uvicorn configuration (green's protocol and limits, say),
        which names the host and port; by default uvicorn's, on 127.0.0.1:``port``.
        ``on_stop``: what the service does at its stop signal before uvicorn drains its
        connections (green: ``services.green.edge.server.before_drain``), done first by :meth:`stop`."""
        if config is None:
            config = uvicorn.Config(
                app, host="127.0.0.1", port=port or free_port(), log_level="warning", lifespan="on"
            )
        self.port = config.port
        self.url = f"http://{config.host}:{self.port}"
        self.server = uvicorn.Server(config)
        self.on_stop = on_stop
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
        a warning in pytest's summary (a connection something left open: a test's waste).

        As the process's stop signal would, it first runs ``on_stop``, then asks uvicorn to exit.
        Not through ``Server.handle_exit``: sse-starlette replaces it with one that ends every
        event stream of the process, and many servers share a test's process."""
        if self.on_stop is not None:
            self.on_stop()
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


SERVICES = ("services.green", "services.purple")
"""What :class:`ServiceProcess` runs: imported once per test worker, by the fork server."""


@functools.cache
def _forks() -> multiprocessing.context.ForkServerContext:
    """multiprocessing's fork server, which imports the services' modules once per test worker
    and forks each service process from itself: a service started that way costs the CPU of
    its own start-up only, not 1.2-1.4 s of importing green's or purple's stack again."""
    forks = multiprocessing.get_context("forkserver")
    forks.set_forkserver_preload([f"{m}.{part}" for m in SERVICES for part in ("__main__", "app")])
    return forks


def _serve(module: str, argv: list[str], env: dict[str, str], log_path: str) -> None:
    """In the forked process: what ``python -m <module> <argv>`` would do, with ``env`` as the
    whole environment, from the repository, stdout and stderr appended to ``log_path``."""
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.chdir(REPO)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [module, *argv]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


class ForkedProcess:
    """The part of :class:`subprocess.Popen` the tests use, for a process of the fork server."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        """None while it runs, else its exit status (minus the signal that ended it)."""
        return self._process.exitcode

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def wait(self, timeout: float | None = None) -> int:
        self._process.join(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0)
        return self.returncode


class ServiceProcess:
    """A service as ``python -m services.<name>`` runs it, in a process of its own (for
    kill/restart tests, and to test its real server): forked from a server process that has
    imported the services (:func:`_forks`), then ``services.<name>``'s ``__main__`` runs with
    the given environment. The services' own start (settings, binding, the app, migrations) runs
    in it; the deployed entry point in a fresh interpreter is what the compose tests start."""

    def __init__(self, module: str, port: int, env: dict[str, str], log_path: Path) -> None:
        assert module in SERVICES, module
        self.module, self.port, self.env, self.log_path = module, port, env, log_path
        self.url = f"http://127.0.0.1:{port}"
        self.instance = env.get("GREEN_INSTANCE_NAME")
        """A green's instance name (its containers' ``arena.owner`` label), when set."""
        self.proc: ForkedProcess | None = None

    def start(self, timeout: float = 60) -> ServiceProcess:
        argv = ["--host", "127.0.0.1", "--port", str(self.port)]
        env = {**os.environ, **self.env}
        process = _forks().Process(
            target=_serve, args=(self.module, argv, env, str(self.log_path)), daemon=True
        )
        process.start()
        self.proc = ForkedProcess(process)
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
