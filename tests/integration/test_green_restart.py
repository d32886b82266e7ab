"""Green killed mid-task (SIGKILL, no cleanup) and restarted: the task is failed, no container left."""

from __future__ import annotations

import time

import pytest

from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.models import Task
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import (
    OPERATOR,
    OPERATOR_TOKEN,
    submit_task,
    wait_status,
    wait_terminal,
    wait_until,
)
from tests.support import web
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy
from tests.support.servers import ServiceProcess, ThreadedServer, free_port

pytestmark = pytest.mark.docker


@pytest.fixture
def green_database_url(database_url: str) -> str:
    """This module runs on SQLite and on PostgreSQL."""
    return database_url


def _env(settings) -> dict[str, str]:
    return {
        "GREEN_ASSET_SOURCE": settings.asset_source,
        "GREEN_IMAGE_TEMPLATE": settings.image_template,
        "GREEN_DATABASE_URL": settings.database_url,
        "GREEN_LOG_DIR": str(settings.log_dir),
        "GREEN_ASSET_CACHE_DIR": str(settings.asset_cache_dir),
        "GREEN_PURPLE_POLL_S": "0.5",
        "GREEN_INSTANCE_NAME": settings.instance_name,
        "GREEN_API_TOKEN": OPERATOR_TOKEN,
    }


def test_killed_green_marks_the_task_failed_and_reaps_its_container(
    green_settings, scripted_purple, docker_client, tmp_path
):
    """...and a task it took in but never started stays in the queue (it belongs to no replica
    yet: it used to be failed as "interrupted by restart" too, never having run)."""
    purple_url, _ = scripted_purple(Script(commands=["sleep 3"] * 20))
    env = {**_env(green_settings), "GREEN_PURPLE_URL": purple_url}
    env["GREEN_MAX_CONCURRENT_TASKS"] = "1"
    green = ServiceProcess(
        "services.green", green_settings.port, env, tmp_path / "green.out"
    ).start()
    try:
        task = submit_task(green.url, {"task": "arvo:900005"})
        running = wait_status(green.url, task["id"], "running")
        waiting = submit_task(green.url, {"task": "arvo:900001"})  # the one slot is taken
        assert running["container_name"] in leftover_containers(
            docker_client, green_settings.instance_name
        )
        green.kill()  # SIGKILL: no shutdown hook runs
        assert running["container_name"] in leftover_containers(
            docker_client, green_settings.instance_name
        )
        foreign = docker_client.containers.run(  # another green replica's task on the same engine
            "arena/arvo-base:bookworm",
            "sleep infinity",
            detach=True,
            network_mode="none",
            labels={"arena.managed": "1", "arena.owner": f"other-{green_settings.port}"},
        )

        store = TaskStore(make_engine(green_settings.database_url))
        store.add(
            Task(
                id=f"replica-{green_settings.port}",
                ref_id="900001",
                purple_url="x",
                max_steps=1,
                task_timeout_s=1,
                command_timeout_s=1,
                status="running",
                owner="another-replica",
            )
        )
        green.start()
        assert store.get(f"replica-{green_settings.port}").status == "running"
        foreign.reload()
        assert foreign.status == "running", "start-up reaps only this green's containers"
        foreign.remove(force=True)
        after = web.get(f"{green.url}/tasks/{task['id']}", headers=OPERATOR).json()
        assert after["status"] == "failed" and after["error"] == "interrupted by restart"
        assert after["failure_kind"] == "infra"
        again = web.get(f"{green.url}/tasks/{waiting['id']}", headers=OPERATOR).json()
        assert again["status"] in ("queued", "preparing", "running"), again  # not failed
        started = wait_status(green.url, waiting["id"], "running")
        # the killed task's container was reaped; the one left is the waiting task's, now running
        assert leftover_containers(docker_client, green_settings.instance_name) == [
            started["container_name"]
        ]
    finally:
        green.stop()


def test_graceful_stop_ends_running_tasks_and_removes_containers(
    green_settings, scripted_purple, docker_client, tmp_path
):
    purple_url, _ = scripted_purple(Script(commands=["sleep 3"] * 20))
    env = {**_env(green_settings), "GREEN_PURPLE_URL": purple_url}
    green = ServiceProcess(
        "services.green", green_settings.port, env, tmp_path / "green.out"
    ).start()
    task = submit_task(green.url, {"task": "arvo:900005"})
    wait_status(green.url, task["id"], "running")
    t0 = time.monotonic()
    green.stop()  # SIGTERM: the lifespan shutdown cancels the task and removes its container
    assert time.monotonic() - t0 < 30
    assert leftover_containers(docker_client, green_settings.instance_name) == []
    green.start()
    try:
        after = web.get(f"{green.url}/tasks/{task['id']}", headers=OPERATOR).json()
        assert after["status"] == "failed" and after["error"] == "green shut down"
    finally:
        green.stop()


def test_purple_shut_down_mid_task_records_it_and_green_fails_the_task(
    start_green, green_settings, tmp_path, docker_client
):
    port = free_port()
    settings = PurpleSettings(port=port, log_dir=tmp_path / "logs", trajectory_dir=tmp_path / "t")
    policy = ScriptedPolicy(Script(commands=["sleep 2"] * 20), Observed())
    purple = ThreadedServer(
        create_purple(settings, make_policy=lambda kind="rca_task": policy), port
    ).start()
    green = start_green(purple_url=purple.url, idle_timeout_s=3)
    task = submit_task(green.url, {"task": "arvo:900001"})
    wait_status(green.url, task["id"], "running")
    on_purple = f"{purple.url}/tasks/{task['id']}"
    wait_until(lambda: web.get(on_purple).status_code == 200, "purple never started the job")
    purple.stop()  # lifespan shutdown: the job is cancelled and recorded

    # a purple started on the same folder serves the task's record and trajectory
    other = free_port()
    again = ThreadedServer(create_purple(settings.model_copy(update={"port": other})), other)
    try:
        seen = f"{again.start().url}/tasks/{task['id']}"
        row = web.get(seen).json()
        assert row["status"] == "cancelled" and row["reason"] == "purple shut down"
        assert web.get(f"{seen}/trajectory").json()["status"] == "cancelled"
    finally:
        again.stop()
    done = wait_terminal(green.url, task["id"], timeout=60)
    assert done["status"] == "failed" and done["failure_kind"] == "agent"
    assert leftover_containers(docker_client, green.owner) == []
