"""Two real green processes on one PostgreSQL, real containers, one real purple: tasks posted to
one replica run on both, a replica killed with SIGKILL has its tasks ended (infra,
``replica_lost``) and its containers removed by the other within the lease, cancel works
through either replica (also an A2A cancel of a task whose work another replica runs), and a
second replica of a live replica's name is refused at start."""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from tests.integration.helpers import (
    OPERATOR,
    TERMINAL,
    rpc,
    start_a2a_task,
    submit_task,
    wait_terminal,
)
from tests.integration.test_green_replicas import green_env
from tests.support import web
from tests.support.containers import container_names
from tests.support.scripted_purple import Script
from tests.support.servers import ServiceProcess, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LEASE_S = 6.0
SLOTS = 3
IDS = ["900001", "900002", "900003", "900004"]
HELD = {"preparing", "running", "evaluating"}
RUN = secrets.token_hex(3)
"""Suffix of this session's replica names: a green reaps the containers labelled with its name
as it starts, so two suites on one engine (side-by-side CI runs) must never share a name."""
ENGINE_CALL_S = 60.0
"""The longest one Docker API call of green's may take (``GREEN_DOCKER_TIMEOUT_S``)."""


def _replica(
    settings, db_url: str, name: str, purple_url: str, tmp: Path, slots: int = SLOTS
) -> ServiceProcess:
    port = free_port()
    env = {
        **green_env(settings, db_url, f"{name}-{RUN}"),
        "GREEN_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "GREEN_PURPLE_URL": purple_url,
        "GREEN_PURPLE_POLL_S": "0.5",
        "GREEN_LEASE_S": str(LEASE_S),
        "GREEN_QUEUE_POLL_S": "0.5",
        "GREEN_MAX_CONCURRENT_TASKS": str(slots),
        "GREEN_CONTAINER_MEMORY": "512m",
        "GREEN_DOCKER_TIMEOUT_S": str(ENGINE_CALL_S),
        "GREEN_API_TOKEN_FILE": str(tmp / f"token-{name}"),
    }
    return ServiceProcess("services.green", port, env, tmp / f"{name}.out")


def _tasks(url: str, ids: list[str]) -> dict[str, dict]:
    return {i: web.get(f"{url}/tasks/{i}", headers=OPERATOR, timeout=10).json() for i in ids}


def _until(what, timeout: float, message: str | Callable[[], str], period: float = 0.2):
    """``what()`` once it is true; else, after ``timeout`` s, fail saying ``message`` (a
    callable: what it says then, not at the start of the wait)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := what():
            return result
        time.sleep(period)
    raise AssertionError(message() if callable(message) else message)


def _running_on(url: str, ids: list[str], name: str) -> list[dict]:
    return [
        t for t in _tasks(url, ids).values() if t["status"] == "running" and t["instance"] == name
    ]


def _cancel_through(url: str, task: dict, owner_url: str) -> None:
    """Cancel another replica's task through ``url``: 202 and a note at once, then its owner
    ends it within seconds (its container removed)."""
    r = web.post(f"{url}/tasks/{task['id']}/cancel", headers=OPERATOR, timeout=10)
    assert r.status_code == 202, r.text
    assert task["instance"] in r.json()["note"]
    ended = wait_terminal(owner_url, task["id"], timeout=15)
    assert ended["status"] == "cancelled" and ended["end_reason"] == "cancelled", ended


@pytest.fixture
def slow_purple(scripted_purple) -> str:
    """A real purple whose tasks run commands for about a minute (mid-run when we act)."""
    script = Script(commands=["sleep 1"] * 60, pause_s=0.5)
    url, _ = scripted_purple(script, max_concurrent_tasks=32)
    return url


def test_queue_leases_and_cancel_across_two_replicas(
    green_settings, postgres, slow_purple, docker_client: docker.DockerClient, tmp_path
):
    db_url = postgres.new_database("replica_queue")
    a = _replica(green_settings, db_url, "replica-a", slow_purple, tmp_path).start()
    b = _replica(green_settings, db_url, "replica-b", slow_purple, tmp_path).start()
    try:
        for replica in (a, b):
            health = web.get(f"{replica.url}/healthz", timeout=10).json()
            assert health["instance"] == replica.instance and health["url"] == replica.url, health

        ids = [submit_task(a.url, {"task": f"arvo:{IDS[i % 4]}"})["id"] for i in range(12)]

        # the queue: tasks posted to A run on both replicas, each within its slots
        _until(
            lambda: (
                len(_running_on(a.url, ids, a.instance)) == SLOTS
                and len(_running_on(a.url, ids, b.instance)) == SLOTS
            ),
            120,
            f"tasks did not spread over both replicas: {_tasks(a.url, ids)}",
        )
        started = [t for t in _tasks(a.url, ids).values() if t["status"] == "running"]
        assert {t["instance"] for t in started} == {a.instance, b.instance}

        # cancel through either replica: A cancels B's task, B cancels A's
        _cancel_through(a.url, _running_on(a.url, ids, b.instance)[0], b.url)
        _cancel_through(b.url, _running_on(b.url, ids, a.instance)[0], a.url)

        # kill -9 B mid-run: within the lease A ends every task B held, and removes its containers
        held_by_b = _until(
            lambda: (r := _running_on(a.url, ids, b.instance)) and len(r) == SLOTS and r,
            60,
            "B did not refill its slots",
        )
        b.kill()
        killed_at = time.monotonic()
        b_ids = [t["id"] for t in held_by_b]

        def b_tasks_ended() -> bool:
            now = _tasks(a.url, ids)
            # B held nothing else: every task still unfinished is A's or queued
            assert not [
                t
                for t in now.values()
                if t["instance"] == b.instance and t["status"] in HELD and t["id"] not in b_ids
            ]
            return all(now[i]["status"] in TERMINAL for i in b_ids)

        _until(b_tasks_ended, 3 * LEASE_S + 10, "B's tasks did not end after its death")
        took = time.monotonic() - killed_at
        print(f"replica killed -> its {len(b_ids)} tasks ended by the other: {took:.1f} s")
        for task in _tasks(a.url, b_ids).values():
            assert task["status"] == "failed" and task["failure_kind"] == "infra", task
            assert task["end_reason"] == "replica_lost" and b.instance in task["error"], task
            assert task["instance"] == a.instance, task

        def b_containers() -> list[str]:
            # one call (containers.list inspects each one after listing: a container removed
            # meanwhile raises NotFound)
            labels = ["arena.managed=1", f"arena.owner={b.instance}"]
            found = docker_client.api.containers(all=True, filters={"label": labels})
            return [c["Names"][0] for c in found]

        # The takeover writes the end first (only one replica may win it), then removes, and
        # tries again until the engine has answered: on a loaded machine one engine call may
        # take up to green's Docker timeout, so the wait is on the removal, bounded by that.
        _until(
            lambda: not b_containers(),
            3 * ENGINE_CALL_S,
            lambda: f"B's containers were left: {b_containers()}",
        )

        # A keeps working the queue alone; then cancel what is left (queued ones at once)
        _until(lambda: _running_on(a.url, ids, a.instance), 30, "A stopped claiming")
        for task in _tasks(a.url, ids).values():
            if task["status"] not in TERMINAL:
                web.post(f"{a.url}/tasks/{task['id']}/cancel", headers=OPERATOR, timeout=30)
        for i in ids:
            assert wait_terminal(a.url, i, timeout=30)["status"] in TERMINAL
    finally:
        b.kill()
        a.stop()
    assert container_names(docker_client, ["arena.managed=1", f"arena.owner={a.instance}"]) == []


def test_an_a2a_cancel_ends_the_green_task_another_replica_runs(
    green_settings, postgres, slow_purple, docker_client: docker.DockerClient, tmp_path
):
    """The A2A task lives on the replica that received the message (A); its green task runs on
    B (A's one slot is taken). Cancelling the A2A task on A ends B's task within seconds."""
    db_url = postgres.new_database("replica_a2a_cancel")
    a = _replica(green_settings, db_url, "replica-a", slow_purple, tmp_path, slots=1).start()
    b = None
    try:
        filler = submit_task(a.url, {"task": "arvo:900001"})["id"]
        _until(lambda: _running_on(a.url, [filler], a.instance), 120, "A never ran its task")
        b = _replica(green_settings, db_url, "replica-b", slow_purple, tmp_path, slots=1).start()
        sent = start_a2a_task(a.url, "Task ID: arvo:900002")

        def on_b() -> list[dict]:
            r = web.get(f"{a.url}/tasks", params={"ref": "arvo:900002"}, headers=OPERATOR)
            return [t for t in r.json()["items"] if t["status"] == "running" and t["steps"] >= 1]

        [task] = _until(on_b, 120, "the A2A task's work never ran")
        assert task["instance"] == b.instance, task

        answer = rpc(a.url, "tasks/cancel", {"id": sent["id"]}, headers=OPERATOR).json()
        assert answer.get("result", {}).get("status", {}).get("state") == "canceled", answer
        # B hears of the cancel at its next poll and ends the task, then removes its container
        # (on a loaded machine each step takes seconds): wait on each, bounded by engine calls
        ended = wait_terminal(b.url, task["id"], timeout=ENGINE_CALL_S)
        assert (ended["status"], ended["instance"]) == ("cancelled", b.instance), ended
        labels = ["arena.managed=1", f"arena.task_id={task['id']}"]
        _until(
            lambda: not container_names(docker_client, labels),
            ENGINE_CALL_S,
            lambda: f"the task's container was left: {container_names(docker_client, labels)}",
        )
        assert _tasks(a.url, [filler])[filler]["status"] == "running"  # A's own task runs on
        web.post(f"{a.url}/tasks/{filler}/cancel", headers=OPERATOR, timeout=30)
        assert wait_terminal(a.url, filler, timeout=30)["status"] == "cancelled"
    finally:
        if b is not None:
            b.stop()
        a.stop()


def test_a_second_replica_of_a_live_name_is_refused(green_settings, postgres, tmp_path):
    db_url = postgres.new_database("replica_names")
    first = _replica(green_settings, db_url, "same-name", "http://127.0.0.1:9", tmp_path).start()
    second = _replica(green_settings, db_url, "same-name", "http://127.0.0.1:9", tmp_path)
    try:
        with pytest.raises(RuntimeError, match="exited"):
            second.start(timeout=60)
        assert second.proc is not None and second.proc.returncode not in (0, None)
        out = second.log_path.read_text()
        assert f"another green replica named '{first.instance}' is alive" in out, out[-3000:]
        assert web.get(f"{first.url}/healthz", timeout=10).json()["instance"] == first.instance
    finally:
        second.stop()
        first.stop()
    # a clean stop frees the name: a new replica may take it at once
    third = _replica(green_settings, db_url, "same-name", "http://127.0.0.1:9", tmp_path).start()
    third.stop()


def test_a_frozen_replica_stops_a_task_taken_over_without_rewriting_its_end(
    green_settings, postgres, slow_purple, docker_client: docker.DockerClient, tmp_path
):
    db_url = postgres.new_database("replica_frozen")
    b = _replica(green_settings, db_url, "frozen-b", slow_purple, tmp_path).start()
    a = None
    try:
        task = submit_task(b.url, {"task": "arvo:900001"})
        _until(lambda: _running_on(b.url, [task["id"]], b.instance), 60, "B did not run it")
        a = _replica(green_settings, db_url, "frozen-a", slow_purple, tmp_path).start()
        assert b.proc is not None
        b.proc.send_signal(signal.SIGSTOP)  # alive, but silent past its lease
        ended = wait_terminal(a.url, task["id"], timeout=3 * LEASE_S + 10)
        assert ended["end_reason"] == "replica_lost" and ended["instance"] == a.instance, ended
        b.proc.send_signal(signal.SIGCONT)
        _until(lambda: "task.lease_lost" in b.log_path.read_text(), 2 * LEASE_S, "B never noticed")
        # its runner's cleanup has run (the container is gone: a loaded machine takes seconds)
        # and the end it would have written before that is not there
        _until(
            lambda: not container_names(docker_client, f"arena.task_id={task['id']}"),
            30,
            "B never removed the task's container",
        )
        after = web.get(f"{b.url}/tasks/{task['id']}", headers=OPERATOR, timeout=10).json()
        assert after["status"] == "failed" and after["end_reason"] == "replica_lost", after
        assert after["error"] == ended["error"] and after["instance"] == a.instance, after
    finally:
        if b.proc is not None and b.proc.poll() is None:
            b.proc.send_signal(signal.SIGCONT)
        b.stop()
        if a is not None:
            a.stop()
