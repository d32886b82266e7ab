"""Green over a pool of two real engines: tasks spread, an absent image is pulled from a local
registry (progress in the task's log and events), /healthz shows each engine, and when an engine
stops answering its running task ends as infra while the other engine's task runs on. The image
budget keeps each engine under it.

Engines: the machine's own (``#slots=1``) and a second ``dockerd`` started for the test, empty
(tests/support/second_dockerd.py). The registry is Debian's docker-registry on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.catalog import IMAGE_TEMPLATE
from services.arena.app import app as cli
from tests.integration.helpers import (
    OPERATOR,
    OPERATOR_TOKEN,
    submit_task,
    wait_status,
    wait_terminal,
)
from tests.support import web
from tests.support.containers import container_names
from tests.support.docker_proxy import ENGINE_SOCKET
from tests.support.local_registry import LocalRegistry, local_registry  # noqa: F401
from tests.support.scripted_purple import Script
from tests.support.second_dockerd import SecondEngine, second_dockerd  # noqa: F401
from tests.support.task_images import copy_image, present, remove_all, slim_copy

pytestmark = pytest.mark.docker

ARVO = "900001"
SLIM_TEMPLATE = "arena-test/arvo-slim:{id}-vul"
"""The task's image on a small base (tests/support/task_images.py): pushing and pulling the
714 MB ARVO image made the first test cost ninety seconds; its commands need no compiler."""


def _task(green_url: str, task_id: str) -> dict:
    return web.get(f"{green_url}/tasks/{task_id}", headers=OPERATOR, timeout=10).json()


def _wait_commands(green_url: str, task_id: str, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while _task(green_url, task_id)["steps"] < n:
        assert time.monotonic() < deadline, f"task {task_id} never ran {n} commands"
        time.sleep(0.2)


def test_green_spreads_pulls_and_ends_the_tasks_of_a_down_engine_as_infra(
    start_green,
    scripted_purple,
    docker_client,
    green_settings,
    second_dockerd: SecondEngine,  # noqa: F811
    local_registry: LocalRegistry,  # noqa: F811
) -> None:
    image = slim_copy(docker_client, IMAGE_TEMPLATE.format(id=ARVO), SLIM_TEMPLATE, ARVO)
    source = local_registry.push(docker_client, image)
    purple_url, _ = scripted_purple(Script(commands=["echo hi"] * 400, pause_s=0.3, submit=False))
    green = start_green(
        purple_url=purple_url,
        docker_hosts=[f"unix://{ENGINE_SOCKET}#slots=1", f"{second_dockerd.url}#slots=1"],
        docker_registry=local_registry.address,
        image_template=SLIM_TEMPLATE,
        docker_check_s=1.0,
        cleanup_retry_s=0.5,
        idle_timeout_s=300,
        task_timeout_s=300,
        max_steps=1000,  # the first task must outlive the second one's pull
    )
    second = second_dockerd.client()
    tasks = [submit_task(green.url, {"task": f"arvo:{ARVO}"})["id"] for _ in range(2)]
    for task_id in tasks:
        wait_status(green.url, task_id, "running", timeout=240)
        _wait_commands(green.url, task_id, 1)

    # one task on each engine; the second engine pulled the image from the registry
    owner = f"arena.owner={green.owner}"
    [far] = [c.labels["arena.task_id"] for c in second.containers.list(filters={"label": owner})]
    [near] = [t for t in tasks if t != far]
    logs = "".join(p.read_text() for p in Path(green_settings.log_dir).rglob("*.log"))
    assert f"pulling {source} on engine engine-1" in logs and f"pulled {source}" in logs
    health = web.get(f"{green.url}/healthz", headers=OPERATOR, timeout=10).json()
    assert [(e["name"], e["up"], e["running"]) for e in health["engines"]] == [
        ("engine-0", True, 1),
        ("engine-1", True, 1),
    ]

    # the second engine stops answering: down in /healthz, its task ends as infra
    os.kill(second_dockerd.process.pid, signal.SIGSTOP)
    try:
        ended = wait_terminal(green.url, far, timeout=60)
        assert (ended["status"], ended["failure_kind"]) == ("failed", "infra"), ended
        assert ended["end_reason"] == "sandbox" and "engine-1" in ended["error"], ended
        health = web.get(f"{green.url}/healthz", headers=OPERATOR, timeout=10).json()
        engines = {e["name"]: e for e in health["engines"]}
        assert engines["engine-1"]["up"] is False and engines["engine-0"]["up"] is True
        assert health["docker"] is True  # one engine still answers
        assert _task(green.url, near)["status"] == "running"  # the other engine's task runs on
    finally:
        os.kill(second_dockerd.process.pid, signal.SIGCONT)
    web.post(f"{green.url}/tasks/{near}/cancel", headers=OPERATOR, timeout=60)
    wait_terminal(green.url, near, timeout=60)
    deadline = time.monotonic() + 60  # the janitor removes the far container once it answers
    while container_names(second, owner):
        assert time.monotonic() < deadline, "the down engine's container was never removed"
        time.sleep(0.5)


def test_the_image_budget_keeps_each_engine_under_it(
    start_green,
    docker_client,
    second_dockerd: SecondEngine,  # noqa: F811
    local_registry: LocalRegistry,  # noqa: F811
) -> None:
    slim = slim_copy(docker_client, IMAGE_TEMPLATE.format(id=ARVO), SLIM_TEMPLATE, ARVO)
    source = local_registry.push(docker_client, slim)
    second = second_dockerd.client()
    second.images.pull(source)
    template = f"arena-budget-{uuid.uuid4().hex[:8]}/arvo:{{id}}-vul"
    try:
        near = [copy_image(docker_client, slim, template, "900004")]
        far = [copy_image(second, source, template, ref) for ref in ("900001", "900002", "900003")]
        size = second.images.get(far[0]).attrs["Size"]
        green = start_green(
            docker_hosts=[f"unix://{ENGINE_SOCKET}", second_dockerd.url],
            image_template=template,
            image_budget_gb=1.5 * size / 1e9,
        )
        state = web.get(f"{green.url}/datasets/images", headers=OPERATOR, timeout=30).json()
        assert state["images"] == 4 and state["over"] is True
        assert {name: e["images"] for name, e in state["engines"].items()} == {
            "engine-0": 1,
            "engine-1": 3,
        }
        assert (state["engines"]["engine-0"]["over"], state["engines"]["engine-1"]["over"]) == (
            False,
            True,
        )
        assert {(i["tag"], i["engine"]) for i in state["task_images"]} == {
            (near[0], "engine-0"),
            *((tag, "engine-1") for tag in far),
        }
        health = web.get(f"{green.url}/healthz", headers=OPERATOR, timeout=10).json()
        assert health["images"]["engines"]["engine-1"]["over"] is True

        # only the engine over the budget loses images, never used first (by tag), until within
        r = web.post(f"{green.url}/datasets/images/enforce", headers=OPERATOR, timeout=60)
        assert r.json()["removed"] == [f"engine-1/{far[0]}", f"engine-1/{far[1]}"]
        assert present(second, template) == {far[2]}
        assert present(docker_client, template) == set(near)

        out = CliRunner().invoke(
            cli,
            ["tasks", "images", "--green", green.url, "--api-token", OPERATOR_TOKEN],
            catch_exceptions=False,
            terminal_width=200,
        )
        assert "budget" in out.output and "per engine" in out.output, out.output
        assert "engine-1: 1 image(s)" in out.output and "engine-0: 1 image(s)" in out.output
    finally:
        remove_all(docker_client, template)
        remove_all(second, template)
