"""The deployment end to end: images built from deploy/Dockerfile, the stack started with
deploy/compose.sh (docker compose v2 or docker-compose v1), tasks through REST and A2A, green
creating task containers as siblings through the mounted socket, green killed and restarted
mid-task, and `down -v` leaving nothing behind.

One compose project per module (``arena-e2e-<hex>``, free host ports, images tagged ``:e2e``),
so a running demo is not disturbed. Set ARENA_COMPOSE="docker-compose" (or "docker compose")
to pick the compose implementation.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
from a2a.helpers import get_data_parts
from a2a.types import Role, Task, TaskState

from fixtures.catalog import REPO_ROOT
from services.shared.a2a import A2APeer, new_protocol_message
from services.shared.digests import sha256_file
from tests.e2e.compose import (
    GREEN_UID,
    PURPLE_UID,
    TERMINAL,
    ComposeStack,
    compose_available,
    ensure_python_base,
    require_compose,
    wait_task,
)
from tests.support import web
from tests.support.fixture_builds import build_fixtures

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(1800)]
# past pytest's 600 s: its first test builds the stack's images (the build's own bound is 1,800 s); a loaded machine (load 25 and more) builds for minutes

METRICS = ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou")
TASKS = ("900001", "900006")
A2A_TERMINAL = {
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ComposeStack]:
    require_compose()
    compose = compose_available()
    only = [arg for task in TASKS for arg in ("--only", task)]
    build_fixtures("fixtures.build", *only)
    python_image = ensure_python_base()

    s = ComposeStack(tmp_path_factory.mktemp("e2e"), python_image=python_image)
    print(
        f"\ncompose: {compose}; project {s.project}; green :{s.green_port}, purple :{s.purple_port}"
    )
    try:
        print(f"images built in {s.build():.1f} s")
        t0 = time.monotonic()
        s.up()
        s.wait_healthy()
        print(f"stack healthy in {time.monotonic() - t0:.1f} s")
        yield s
    finally:
        try:
            s.down()
        except Exception as exc:  # the last test asserts a clean down; here: best effort
            print(f"down failed: {exc}")


@pytest.fixture
def green(stack: ComposeStack) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=stack.green_url, timeout=30, headers=stack.operator) as http:
        yield http


def assert_scores(scores: dict[str, Any] | None) -> None:
    assert scores, "no scores"
    for m in METRICS:
        assert 0.0 <= float(scores[m]) <= 1.0, (m, scores[m])
    assert scores["submitted"] is True
    assert scores["locations"], "the submission's locations are missing from the scores"


def test_services_run_unprivileged_with_the_socket(stack: ComposeStack) -> None:
    green_c, purple_c = stack.container("green"), stack.container("purple")
    for c, uid in ((green_c, GREEN_UID), (purple_c, PURPLE_UID)):  # each its own user
        code, out = c.exec_run(["id", "-u"])
        assert (code, out.decode().strip()) == (0, str(uid)), c.name
    mounts = {m["Destination"] for m in green_c.attrs["Mounts"]}
    assert "/var/run/docker.sock" in mounts
    assert "/var/run/docker.sock" not in {m["Destination"] for m in purple_c.attrs["Mounts"]}
    health = web.get(f"{stack.green_url}/healthz", timeout=10).json()
    assert (health["status"], health["docker"], health["database"]) == ("ok", True, True)
    assert "images" not in health  # the image budget is the operator's
    health = web.get(f"{stack.green_url}/healthz", headers=stack.operator, timeout=10).json()
    assert "budget_gb" in health["images"]
    assert web.get(f"{stack.purple_url}/healthz", timeout=10).json()["policy"] == "stacktrace"
    card = web.get(f"{stack.green_url}/.well-known/agent-card.json", timeout=10).json()
    assert "0.0.0.0" not in json.dumps(card)
    # the card advertises the published host address; purple is told green's service name
    assert card["url"] == f"http://localhost:{stack.green_port}/"


def test_rest_task_runs_in_a_sibling_container(stack: ComposeStack, green: httpx.Client) -> None:
    with stack.task_container_events() as engine_events:
        r = green.post("/tasks", json={"task": "arvo:900001"})
        assert r.status_code == 202, r.text
        task_id = r.json()["id"]

        task = wait_task(green, task_id)
        assert task["status"] == "completed", task
        assert task["end_reason"] == "submitted", task
        assert_scores(task["scores"])
        assert task["container_name"].startswith("arena-task-")  # kind-neutral names

        # Green (in its container) created the task container on the host's engine, removed it.
        events = engine_events.wait_for(task_id, "destroy")
    assert "create" in events and "start" in events and "destroy" in events, events
    assert stack.task_containers(task_id) == []

    # The image has no checkout; its build recorded this one (deploy/compose.sh passed it).
    build = task["provenance"]["green"]
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert build["commit"] == head and isinstance(build["dirty"], bool), build
    assert build["lock_sha256"] == sha256_file(REPO_ROOT / "uv.lock"), build

    # Each service wrote into its own folder (logs/green, logs/purple; the same ARENA_LOG_RUN),
    # bind-mounted from the host.
    log = (stack.logs_dir / "green" / stack.log_run / "arvo_900001.log").read_text()
    assert task_id in log and "service=green" in log
    purple_log = (stack.logs_dir / "purple" / stack.log_run / f"task_{task_id}.log").read_text()
    assert "service=purple" in purple_log and "900001" not in purple_log


async def test_a2a_task_id_message(stack: ComposeStack) -> None:
    # The client calls the base URL it was given, whatever the card advertises.
    peer = A2APeer(stack.green_url, timeout=60, headers=stack.operator)
    try:
        sent = await peer.send(
            new_protocol_message("Task ID: arvo:900006", role=Role.ROLE_USER),
            return_immediately=True,
        )
        assert isinstance(sent, Task), sent
        deadline = time.monotonic() + 240
        task = sent
        while task.status.state not in A2A_TERMINAL:
            assert time.monotonic() < deadline, f"A2A task still {task.status.state}"
            await asyncio.sleep(0.5)
            task = await peer.get_task(sent.id)
    finally:
        await peer.aclose()

    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
    results = [a for a in task.artifacts if a.name == "Result"]
    assert len(results) == 1, task.artifacts
    data = next(d for d in get_data_parts(results[0].parts) if isinstance(d, dict))
    [outcome] = data["tasks"]
    assert outcome["arvo_id"] == "900006"
    assert outcome["status"] == "completed", outcome
    assert_scores(outcome["scores"])
    assert stack.task_containers(outcome["task_id"]) == []


def start_stalled_task(stack: ComposeStack, green: httpx.Client) -> tuple[str, Any]:
    """A task whose purple never submits: `running`, with its container alive."""
    r = green.post(
        "/tasks", json={"task": "arvo:900001", "purple_url": "http://purple-stalled:9019"}
    )
    assert r.status_code == 202, r.text
    task_id = r.json()["id"]
    task = wait_task(green, task_id, until={"running", *TERMINAL}, timeout=120)
    assert task["status"] == "running", task
    [container] = stack.task_containers(task_id)
    assert container.labels.get("arena.managed") == "1"
    assert container.labels.get("arena.owner") == stack.project  # GREEN_INSTANCE_NAME
    assert container.status == "running"
    return task_id, container


def test_green_killed_mid_task(stack: ComposeStack, green: httpx.Client) -> None:
    task_id, container = start_stalled_task(stack, green)

    green_c = stack.container("green")
    green_c.kill()  # SIGKILL: no graceful shutdown, the task is left `running` in the database
    green_c.reload()
    if green_c.status != "running":  # restart: unless-stopped does not restart a killed container
        stack.run("start", "green")
    stack.wait_healthy(("green",))

    task = wait_task(green, task_id, timeout=60)
    assert task["status"] == "failed", task
    assert task["error"] == "interrupted by restart", task
    assert task["failure_kind"] == "infra", task
    assert stack.task_containers(task_id) == [], "the restarted green did not reap the container"
    with pytest.raises(docker.errors.NotFound):
        container.reload()


def test_green_restarted_mid_task(stack: ComposeStack, green: httpx.Client) -> None:
    task_id, _ = start_stalled_task(stack, green)

    stack.run("restart", "green")  # SIGTERM: green stops its tasks and removes their containers
    stack.wait_healthy(("green",))

    task = wait_task(green, task_id, timeout=60)
    assert task["status"] == "failed", task
    assert task["end_reason"] == "interrupted", task
    assert task["error"] in ("green shut down", "interrupted by restart"), task
    print(f"graceful restart: {task['status']} / {task['end_reason']} / {task['error']}")
    assert stack.task_containers(task_id) == []


def test_purple_can_read_nothing_of_greens_and_no_bug_id(stack: ComposeStack) -> None:
    """Issue 39, attack 10: green's logs pair each task's id with its bug's (``arvo_<id>.log``),
    which the task message masks. Purple shares no volume with green and runs as another user;
    after the tasks above, no file purple can read names a bug, and it writes no file of green's."""
    green_c, purple_c = stack.container("green"), stack.container("purple")
    shared = {m["Name"] for m in green_c.attrs["Mounts"] if m.get("Name")} & {
        m["Name"] for m in purple_c.attrs["Mounts"] if m.get("Name")
    }
    assert not shared, shared
    sources = {m["Source"] for m in purple_c.attrs["Mounts"]}
    assert not sources & {m["Source"] for m in green_c.attrs["Mounts"]}, sources
    pattern = "|".join(f"arvo.{t}" for t in TASKS)  # arvo:900001, arvo_900001.log, ...
    code, out = purple_c.exec_run(["grep", "-rlE", pattern, "/logs", "/data", "/tmp"])
    assert (code, out.decode()) == (1, ""), out.decode()  # its files: nothing names a bug
    code, out = purple_c.exec_run(["sh", "-c", "ls /logs/*/ && ls /logs/*/arvo_* 2>&1"])
    assert "task_" in out.decode() and "No such file" in out.decode(), out.decode()


def test_down_leaves_nothing(stack: ComposeStack, green: httpx.Client) -> None:
    r = green.get("/tasks", params={"limit": 500})
    task_ids = [t["id"] for t in r.json()["items"]]
    assert len(task_ids) >= 4
    stack.down()
    assert stack.containers() == []
    assert stack.volumes() == []
    for task_id in task_ids:
        assert stack.task_containers(task_id) == []


def test_logs_folder_is_on_the_host(stack: ComposeStack) -> None:
    run_dir: Path = stack.logs_dir / "green" / stack.log_run
    assert (run_dir / "agents.log").is_file()
    names = {p.name for p in run_dir.iterdir()}
    assert {"arvo_900001.log", "arvo_900006.log"} <= names, names
    purple_names = {p.name for p in (stack.logs_dir / "purple" / stack.log_run).iterdir()}
    assert any(n.startswith("task_") for n in purple_names), purple_names
    assert not any(n.startswith("arvo_") for n in purple_names), purple_names
