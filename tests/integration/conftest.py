"""Real services on 127.0.0.1, real containers, the locally built fixture tasks."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
import pytest

from fixtures.catalog import DEFAULT_ASSETS_DIR, FIX_IMAGE_TEMPLATE, IMAGE_TEMPLATE, REPO_ROOT
from services.green.app import create_app as create_green
from services.green.config import DeveloperChecks, GreenSettings
from services.green.edge.server import before_drain
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.containers import container_names
from tests.support.fake_llm import FakeLLMServer, FakeReply
from tests.support.fixture_builds import build_fixtures
from tests.support.parallel import once_per_run
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy
from tests.support.servers import ServiceProcess, ThreadedServer, free_port, serve

pytestmark = pytest.mark.docker

CHECKS = DeveloperChecks(database_check_off_loop=True)
"""The suite's greens: their event loop never waits on the database."""


@pytest.fixture(scope="session")
def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env()
        client.ping()
        return client
    except Exception as exc:
        pytest.skip(f"Docker engine unreachable ({exc}); run scripts/ensure-docker.sh")


@pytest.fixture(scope="session")
def fixture_assets(docker_client) -> Path:
    """Build (or confirm cached) the fixture images and assets once per run (per session, or
    by the first of several workers)."""

    def build() -> Path:
        build_fixtures(timeout=2400)
        return DEFAULT_ASSETS_DIR

    return once_per_run("fixture-assets", build, lambda: DEFAULT_ASSETS_DIR)


def leftover_containers(client: docker.DockerClient, owner: str | None = None) -> list[str]:
    """Task containers still around (of one green when ``owner`` is given)."""
    labels = ["arena.managed=1"] + ([f"arena.owner={owner}"] if owner else [])
    return container_names(client, labels)


@pytest.fixture
def green_database_url(tmp_path: Path) -> str:
    """Green's database: a SQLite file. A module that runs on both backends overrides this with
    ``database_url`` (SQLite, then a fresh database on the test session's PostgreSQL)."""
    return f"sqlite:///{tmp_path}/green.db"


@pytest.fixture
def green_settings(tmp_path: Path, fixture_assets: Path, green_database_url: str) -> GreenSettings:
    port = free_port()
    return GreenSettings(
        host="127.0.0.1",
        port=port,
        asset_source=str(fixture_assets),
        asset_cache_dir=tmp_path / "cache",
        image_template=IMAGE_TEMPLATE,
        fix_image_template=FIX_IMAGE_TEMPLATE,
        database_url=green_database_url,
        log_dir=tmp_path / "logs",
        purple_url="http://127.0.0.1:9",
        purple_allowlist=["http://127.0.0.1:*"],
        purple_start_retry_s=2,  # not 30: a test's unreachable purple fails its task in seconds
        api_token=OPERATOR_TOKEN,
        api_token_file=tmp_path / "operator-token",
        max_concurrent_tasks=8,
        task_timeout_s=120,
        idle_timeout_s=60,
        command_timeout_s=30,
        max_steps=30,
        purple_poll_s=0.5,
        container_memory="1g",
        instance_name=f"test-{port}",
    )


@pytest.fixture
def start_green(green_settings: GreenSettings) -> Iterator[Callable[..., ThreadedServer]]:
    servers: list[ThreadedServer] = []

    def start(**overrides) -> ThreadedServer:
        settings = green_settings.model_copy(update=overrides)
        app = create_green(settings, checks=CHECKS)
        stop_signal = functools.partial(before_drain, app)  # what green's own server does first
        srv = ThreadedServer(app, port=settings.port, on_stop=stop_signal).start()
        srv.owner = settings.instance_name  # its containers carry arena.owner=<this>
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.stop()


@pytest.fixture
def scripted_purple(tmp_path: Path) -> Iterator[Callable[..., tuple[str, Observed]]]:
    """Start a purple whose policy is a fixed script; returns (url, what it observed).
    Keyword arguments are purple settings (e.g. ``max_concurrent_tasks``)."""
    stack: list = []

    def start(script: Script, wrap=None, **settings_: object) -> tuple[str, Observed]:
        """``wrap``: what serves purple's app instead of it (e.g. one that records requests)."""
        observed = Observed()
        port = free_port()
        settings = PurpleSettings(
            port=port,
            log_dir=tmp_path / "logs",
            trajectory_dir=tmp_path / "traj",
            **settings_,
        )
        app = create_purple(
            settings, make_policy=lambda kind="rca_task": ScriptedPolicy(script, observed)
        )
        cm = serve(wrap(app) if wrap else app, port)
        srv = cm.__enter__()
        stack.append(cm)
        return srv.url, observed

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


@pytest.fixture
def analyst_url(tmp_path: Path) -> Iterator[str]:
    """A real purple running the offline stack-trace analyst, in this process."""
    port = free_port()
    settings = PurpleSettings(
        port=port,
        policy="stacktrace",
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj-analyst",
    )
    with serve(create_purple(settings), port) as srv:
        yield srv.url


@pytest.fixture(autouse=True)
def shared_log_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Green and purple of one test share a log run folder, as docker compose makes them."""
    monkeypatch.setenv("ARENA_LOG_RUN", "log_test")


A2A_03 = "a2a-sdk==0.3.26"


@pytest.fixture(scope="session")
def a2a03_python() -> Path:
    venv = REPO_ROOT / "build" / "venv-a2a03"
    python = venv / "bin" / "python"
    marker = venv / ".installed"

    def build() -> Path:
        if not (marker.exists() and marker.read_text() == A2A_03):
            uv = shutil.which("uv")
            assert uv, (
                "uv is needed to build the a2a-sdk 0.3 environment (scripts/setup.sh installs it)"
            )
            subprocess.run([uv, "venv", "-q", "--python", "3.11", str(venv)], check=True)
            subprocess.run(
                [uv, "pip", "install", "-q", "--python", str(python), A2A_03, "httpx"], check=True
            )
            marker.write_text(A2A_03)
        return python

    return once_per_run("venv-a2a03", build, lambda: None)  # workers in turn: each checks


@pytest.fixture
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def llm_purple(tmp_path, llm):
    stack: list = []

    def start(**overrides):
        port = free_port()
        settings = PurpleSettings(
            port=port,
            policy="react",
            model="fake-model",
            openai_base_url=llm.base_url,
            openai_api_key="test",
            log_dir=tmp_path / "logs",
            trajectory_dir=tmp_path / "traj",
            llm_retries=1,
            **overrides,
        )
        cm = serve(create_purple(settings), port)
        stack.append(cm)
        return cm.__enter__()

    yield start
    for cm in stack:
        cm.__exit__(None, None, None)


@pytest.fixture
def llm_purple_process(tmp_path: Path):
    """A real purple process (ReAct policy) whose LLM never stops running commands."""
    with FakeLLMServer(
        default=FakeReply(tool_calls=[("run_bash_cmd", {"command": "sleep 1"})])
    ) as llm:
        port = free_port()
        env = {
            "PURPLE_POLICY": "react",
            "PURPLE_MODEL": "fake-model",
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": "test",
            "PURPLE_LOG_DIR": str(tmp_path / "logs"),
            "PURPLE_TRAJECTORY_DIR": str(tmp_path / "traj"),
        }
        purple = ServiceProcess("services.purple", port, env, tmp_path / "purple.out")
        yield purple
        purple.stop()
