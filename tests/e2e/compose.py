"""Drive the real deployment (deploy/compose.sh: docker compose v2 or docker-compose v1) from tests.

A :class:`ComposeStack` is one compose project with its own name, host ports, log folder and
image tags, so it never collides with a running demo (project ``arena``, ports 9009/9019).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from fixtures.catalog import REPO_ROOT

COMPOSE_SH = REPO_ROOT / "deploy" / "compose.sh"
E2E_FILE = Path(__file__).resolve().parent / "docker-compose.e2e.yml"
PYTHON_BASE_SH = REPO_ROOT / "images" / "python-base.sh"
GREEN_UID = 10001
PURPLE_UID = 10002
"""The services' users (deploy/Dockerfile): each its own, so neither reads or writes the other's files."""
TERMINAL = {"completed", "failed", "cancelled"}


class ComposeError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def compose_available() -> str | None:
    """The compose that deploy/compose.sh will use, or None."""
    forced = os.environ.get("ARENA_COMPOSE")
    candidates = [forced.split()] if forced else [["docker", "compose"], ["docker-compose"]]
    for cmd in candidates:
        if shutil.which(cmd[0]) is None:
            continue
        proc = subprocess.run([*cmd, "version"], capture_output=True, text=True, check=False)
        if proc.returncode == 0:
            return " ".join(cmd)
    return None


def require_compose() -> docker.DockerClient:
    """The engine's client; the calling test is skipped (with how to get them) without an
    engine or a compose."""
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        pytest.skip(f"Docker engine unreachable ({exc}); run scripts/ensure-docker.sh")
    if compose_available() is None:
        pytest.skip(
            "no docker compose (v2) nor docker-compose (v1); apt-get install docker-compose"
        )
    return client


STOCK_PYTHON = "python:3.11-slim-bookworm"
OWN_PYTHON = "arena/python-base:3.11-bookworm"


def ensure_python_base() -> str:
    """The Dockerfile's base image, as scripts/demo.sh picks it: the stock image when this engine
    has it (and it is not a stand-in of ours: those carry ``arena.recipe``), else our own
    stand-in, built under our own name by images/python-base.sh (no registry here)."""
    try:
        labels = docker.from_env().images.get(STOCK_PYTHON).labels or {}
        if "arena.recipe" not in labels:
            return STOCK_PYTHON
    except docker.errors.ImageNotFound:
        pass
    proc = subprocess.run(
        ["bash", str(PYTHON_BASE_SH), OWN_PYTHON],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    if proc.returncode != 0:
        raise ComposeError(f"images/python-base.sh failed:\n{proc.stdout}\n{proc.stderr}")
    return OWN_PYTHON


@dataclass
class ComposeStack:
    """One project of deploy/docker-compose.yml + the demo overlay + tests/e2e's overlay."""

    workdir: Path
    """Holds the stack's log folders (``logs/green`` and ``logs/purple``, each bind-mounted at
    /logs in its service only)."""
    project: str = field(default_factory=lambda: f"arena-e2e-{secrets.token_hex(3)}")
    green_port: int = field(default_factory=free_port)
    purple_port: int = field(default_factory=free_port)
    image_tag: str = "e2e"
    log_run: str = "log_e2e"
    python_image: str = STOCK_PYTHON

    def __post_init__(self) -> None:
        self.logs_dir = self.workdir / "logs"
        self.token_dir = self.workdir / "secrets"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        owners = {
            self.logs_dir / "green": GREEN_UID,
            self.logs_dir / "purple": PURPLE_UID,
            self.token_dir: GREEN_UID,
        }
        for d, uid in owners.items():
            d.mkdir(parents=True, exist_ok=True)
            if os.geteuid() == 0:
                os.chown(d, uid, uid)
            else:
                d.chmod(0o777)
        self.docker = docker.from_env()

    # ---- compose -------------------------------------------------------------------------

    @property
    def green_url(self) -> str:
        return f"http://127.0.0.1:{self.green_port}"

    @property
    def operator(self) -> dict[str, str]:
        """The header with the operator token green generated at its first start."""
        token = (self.token_dir / "operator-token").read_text().strip()
        return {"Authorization": f"Bearer {token}"}

    @property
    def purple_url(self) -> str:
        return f"http://127.0.0.1:{self.purple_port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for key in list(env):  # the developer's settings must not leak into the stack
            if key.startswith(("GREEN_", "PURPLE_", "OPENAI_")):
                del env[key]
        env.update(
            COMPOSE_PROJECT_NAME=self.project,
            ARENA_ENV_FILE="",  # ignore the repository's .env
            ARENA_GREEN_PORT=str(self.green_port),
            ARENA_PURPLE_PORT=str(self.purple_port),
            ARENA_GREEN_IMAGE=f"arena/green:{self.image_tag}",
            ARENA_PURPLE_IMAGE=f"arena/purple:{self.image_tag}",
            ARENA_LOGS_DIR=str(self.logs_dir),
            ARENA_TOKEN_DIR=str(self.token_dir),
            ARENA_LOG_RUN=self.log_run,
            PYTHON_IMAGE=self.python_image,
            # Short task limits: a stuck test fails fast instead of holding a container.
            GREEN_TASK_TIMEOUT_S="300",
            GREEN_IDLE_TIMEOUT_S="240",
            GREEN_CONTAINER_MEMORY="1g",
            GREEN_PURPLE_ALLOWLIST='["http://purple-stalled:9019"]',  # the e2e overlay's purple
        )
        return env

    def run(self, *args: str, timeout: float = 300) -> str:
        cmd = ["bash", str(COMPOSE_SH), "--demo", "-f", str(E2E_FILE), *args]
        proc = subprocess.run(
            cmd,
            env=self.env(),
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if proc.returncode != 0:
            raise ComposeError(
                f"{' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
            )
        return proc.stdout + proc.stderr

    def build(self) -> float:
        t0 = time.monotonic()
        self.run("build", "green", "purple", timeout=1800)
        return time.monotonic() - t0

    def up(self) -> None:
        self.run("up", "-d", timeout=300)

    def down(self) -> None:
        self.run("down", "-v", "--remove-orphans", "--timeout", "30", timeout=300)

    # ---- the project's containers and volumes ----------------------------------------------

    def containers(self, service: str | None = None) -> list[Any]:
        labels = [f"com.docker.compose.project={self.project}"]
        if service:
            labels.append(f"com.docker.compose.service={service}")
        return self.docker.containers.list(all=True, filters={"label": labels})

    def container(self, service: str) -> Any:
        found = self.containers(service)
        if len(found) != 1:
            raise ComposeError(f"expected one {service} container, found {len(found)}")
        return found[0]

    def volumes(self) -> list[Any]:
        return self.docker.volumes.list(
            filters={"label": f"com.docker.compose.project={self.project}"}
        )

    def wait_healthy(
        self,
        services: tuple[str, ...] = ("green", "purple", "purple-stalled"),
        timeout: float = 180,
    ) -> None:
        """Docker's health status (the compose healthchecks on /healthz) of every service."""
        deadline = time.monotonic() + timeout
        while True:
            states = {}
            for name in services:
                try:
                    c = self.container(name)
                    c.reload()
                    states[name] = c.attrs["State"].get("Health", {}).get("Status", c.status)
                except ComposeError as exc:
                    states[name] = str(exc)
            if all(s == "healthy" for s in states.values()):
                return
            if time.monotonic() > deadline:
                logs = {n: self.logs(n)[-3000:] for n in services}
                raise ComposeError(f"not healthy after {timeout:.0f} s: {states}\n{logs}")
            time.sleep(1)

    def logs(self, service: str) -> str:
        try:
            return self.container(service).logs().decode(errors="replace")
        except ComposeError as exc:
            return str(exc)

    # ---- task containers (siblings that green creates through the mounted socket) ----------

    def task_containers(self, task_id: str) -> list[Any]:
        return self.docker.containers.list(all=True, filters={"label": f"arena.task_id={task_id}"})

    @contextlib.contextmanager
    def task_container_events(self) -> Iterator[TaskEvents]:
        """The engine's events of task containers from now until the block ends, recorded as
        they come. Not asked of its history afterwards: the engine keeps only its last 256
        events, which every command's exec fills, so a busy engine had already dropped a
        task's ``create`` by the time it ended."""
        stream = self.docker.events(
            decode=True, filters={"type": "container", "label": "arena.task_id"}
        )
        events = TaskEvents()

        def record() -> None:
            try:
                for event in stream:
                    events.seen.append(event)
            except Exception:  # the stream closed under the reader: the block is over
                pass

        reader = threading.Thread(target=record, name="engine-events", daemon=True)
        reader.start()
        try:
            yield events
        finally:
            stream.close()
            reader.join(timeout=10)


@dataclass
class TaskEvents:
    """Container events the engine sent while :meth:`ComposeStack.task_container_events` ran."""

    seen: list[dict[str, Any]] = field(default_factory=list)

    def actions(self, task_id: str) -> list[str]:
        """Actions (create, start, exec_create: ..., destroy) on the containers of one task."""
        return [
            e.get("Action") or e.get("status", "")
            for e in list(self.seen)
            if e.get("Actor", {}).get("Attributes", {}).get("arena.task_id") == task_id
        ]

    def wait_for(self, task_id: str, action: str, timeout: float = 30) -> list[str]:
        """The task's actions once ``action`` is among them (or the deadline passed)."""
        deadline = time.monotonic() + timeout
        while action not in self.actions(task_id) and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.actions(task_id)


def wait_task(
    http: httpx.Client, task_id: str, *, until: set[str] = TERMINAL, timeout: float = 240
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            r = http.get(f"/tasks/{task_id}")
            if r.status_code == 200 and r.json()["status"] in until:
                return r.json()
        except httpx.TransportError:
            pass  # green is restarting
        if time.monotonic() > deadline:
            raise TimeoutError(f"task {task_id} not in {sorted(until)} after {timeout:.0f} s")
        time.sleep(0.3)


def demo_env(tmp_path: Path, tag: str) -> dict[str, str]:
    """The environment of a ``make demo`` (scripts/demo.sh) of its own: compose project, host
    ports, token and log folders and image tags, so the user's demo stack (project ``arena``,
    ports 9009/9019) is never touched; none of the user's GREEN_/PURPLE_/OPENAI_ variables."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("GREEN_", "PURPLE_", "OPENAI_"))
    }
    env.update(
        COMPOSE_PROJECT_NAME=f"arena-{tag}-{secrets.token_hex(3)}",
        ARENA_ENV_FILE="",
        ARENA_GREEN_PORT=str(free_port()),
        ARENA_PURPLE_PORT=str(free_port()),
        ARENA_TOKEN_DIR=str(tmp_path / "secrets"),
        ARENA_LOGS_DIR=str(tmp_path / "logs"),
        ARENA_GREEN_IMAGE=f"arena/green:{tag}",
        ARENA_PURPLE_IMAGE=f"arena/purple:{tag}",
    )
    return env


def run_demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``scripts/demo.sh`` as a user runs it (``make demo``), in a :func:`demo_env`."""
    return subprocess.run(
        ["bash", "scripts/demo.sh"],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )


def demo_down(env: dict[str, str]) -> None:
    """Stop a :func:`demo_env` stack and remove its volumes."""
    subprocess.run(
        ["bash", "deploy/compose.sh", "--demo", "down", "-v", "--remove-orphans"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        timeout=300,
        check=False,
    )
