"""Whose failure is it, through the real green, real purples and real containers.

The written rule (docs/scoring.md): a failure is infra only when green can show the agent did
not cause it. An agent cannot turn its failures into infra ones (killing everything in its
container, a loc.json that breaks the parser), purple dying ends its task within seconds and
names it, an unreachable purple is retried before a task fails as never started, an engine
outage is infra and leaves no container behind, and a cancel or a shutdown in the middle of
preparation never orphans a container.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, submit_task, wait_for, wait_status, wait_terminal
from tests.integration.test_green_lifecycle import perfect_file_and_function
from tests.support import web
from tests.support.containers import container_names
from tests.support.docker_proxy import DockerProxy
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy
from tests.support.servers import ThreadedServer, free_port

pytestmark = pytest.mark.docker


def _containers_of(docker_client, task_id: str) -> list[str]:
    return container_names(docker_client, f"arena.task_id={task_id}")


# -- the agent's failures stay the agent's -------------------------------------------------------


def test_killing_everything_in_the_container_does_not_end_the_task(start_green, scripted_purple):
    purple_url, seen = scripted_purple(
        Script(
            commands=["kill -9 -1", "pkill sleep; kill -TERM -1", "echo alive"],
            submissions=[perfect_file_and_function(900001)],
        )
    )
    green = start_green(purple_url=purple_url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["status"] == "completed", done
    assert seen.results[-1].output == "alive\n"


def test_a_memory_hog_kills_only_its_own_processes_and_fails_as_the_agent(
    start_green, scripted_purple, docker_client
):
    """The agent tries to make pid 1 the OOM killer's choice (before, that killed the container:
    ``memory_limit``): pid 1 is root's now, so the hog's own processes die, the container and
    the session go on, and the task, with no submission, is the agent's failure. (OOMKilled of
    the container is still the agent's ``memory_limit``: tests/sandbox/test_sandbox_faults.py.)"""
    hog = (
        "echo 1000 > /proc/1/oom_score_adj; for i in 1 2 3 4 5 6; do "
        "python3 -c 'import time; b = bytearray(60 * 2**20); time.sleep(5)' & done; wait"
    )
    purple_url, seen = scripted_purple(Script(commands=[hog, "echo still"]))
    green = start_green(purple_url=purple_url, container_memory="256m")
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "failed" and done["failure_kind"] == "agent", done
    assert "Permission denied" in seen.results[0].output, seen.results[0].output
    assert seen.results[1].output == "still\n"
    assert _containers_of(docker_client, task["id"]) == []


def test_a_loc_json_that_breaks_the_parser_is_the_agents_failure(start_green, scripted_purple):
    purple_url, seen = scripted_purple(Script(commands=[], submissions=["[" * 100_000]))
    green = start_green(purple_url=purple_url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert [r.accepted for r in seen.submit_replies] == [False]
    assert "too deeply" in seen.submit_replies[0].errors[0]
    assert done["status"] == "failed" and done["failure_kind"] == "agent", done
    assert "too deeply" in done["error"]


def test_an_oversized_command_is_refused_with_its_size(start_green, scripted_purple):
    purple_url, seen = scripted_purple(Script(commands=["echo " + "x" * 10_000, "echo after"]))
    green = start_green(purple_url=purple_url, command_max_bytes=4096)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert seen.results == [] and seen.ended is not None
    assert "10,005 bytes" in seen.ended and "the limit is 4,096" in seen.ended
    assert done["status"] == "failed" and done["failure_kind"] == "agent"


# -- cancel and shutdown while preparing ---------------------------------------------------------


def test_cancel_while_preparing_never_orphans_a_container(
    start_green, scripted_purple, docker_client
):
    purple_url, _ = scripted_purple(Script(commands=["sleep 5"] * 10))
    green = start_green(purple_url=purple_url)
    rng = random.Random(11)
    ids = []
    for _ in range(8):
        task = submit_task(green.url, {"task": "arvo:900002"})
        ids.append(task["id"])
        wait_for(green.url, task["id"], {"preparing"})
        time.sleep(rng.uniform(0.0, 0.4))  # somewhere in assets, ground truth, create, copy
        web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR, timeout=60)
    for task_id in ids:
        done = wait_terminal(green.url, task_id, timeout=120)
        assert done["status"] == "cancelled", done
        assert _containers_of(docker_client, task_id) == [], "an ended task left its container"
    assert leftover_containers(docker_client, green.owner) == []


def test_shutdown_while_preparing_never_orphans_a_container(
    green_settings, start_green, scripted_purple, docker_client
):
    purple_url, _ = scripted_purple(Script(commands=["sleep 5"] * 10))
    green = start_green(purple_url=purple_url)
    ids = [submit_task(green.url, {"task": "arvo:900003"})["id"] for _ in range(4)]
    wait_for(green.url, ids[-1], {"preparing"})
    time.sleep(0.2)
    green.stop()
    assert leftover_containers(docker_client, green.owner) == []
    again = start_green(purple_url=purple_url)
    for task_id in ids:
        task = web.get(f"{again.url}/tasks/{task_id}", headers=OPERATOR, timeout=10).json()
        assert task["status"] == "failed" and task["failure_kind"] == "infra", task


# -- the engine unreachable ----------------------------------------------------------------------


def test_engine_outage_is_infra_and_leaves_no_container(
    start_green, scripted_purple, docker_client, monkeypatch
):
    proxy = DockerProxy(Path(f"/tmp/arena-proxy-{secrets.token_hex(4)}.sock")).start()
    try:
        monkeypatch.setenv("DOCKER_HOST", proxy.url)  # green's docker client goes through it
        purple_url, _ = scripted_purple(Script(commands=["sleep 1"] * 60))
        green = start_green(purple_url=purple_url, cleanup_retry_s=1.0)
        task = submit_task(green.url, {"task": "arvo:900004"})
        running = wait_status(green.url, task["id"], "running")
        time.sleep(1.5)
        proxy.stop()
        # the task ends while the engine is still unreachable (its container cannot be removed
        # yet: the janitor retries once the engine is back)
        done = wait_terminal(green.url, task["id"], timeout=60)
        proxy.start()
        assert done["status"] == "failed" and done["failure_kind"] == "infra", done
        back = time.monotonic()
        while leftover_containers(docker_client, green.owner) and time.monotonic() - back < 30:
            time.sleep(0.5)
        assert leftover_containers(docker_client, green.owner) == []
        assert running["container_name"]
    finally:
        proxy.stop()


# -- purple liveness -----------------------------------------------------------------------------


@pytest.mark.parametrize("restart", [True, False], ids=["restarted", "gone"])
def test_purple_dying_mid_task_ends_it_within_seconds(
    start_green, llm_purple_process, docker_client, restart: bool
):
    purple = llm_purple_process.start()
    # restarted: only "task not found" may end it (the silence while purple restarts is short
    # of purple_lost_after_s); gone: the silence does
    lost_after = 120 if restart else 5
    green = start_green(purple_url=purple.url, idle_timeout_s=300, purple_lost_after_s=lost_after)
    task = submit_task(green.url, {"task": "arvo:900001"})
    wait_status(green.url, task["id"], "running")
    deadline = time.monotonic() + 60
    while (
        web.get(f"{green.url}/tasks/{task['id']}", headers=OPERATOR, timeout=10).json()["steps"] < 2
    ):
        assert time.monotonic() < deadline, "purple never ran a command"
        time.sleep(0.2)
    purple.kill()
    died = time.monotonic()
    if restart:
        purple.start()  # same port, empty A2A task store
    done = wait_terminal(green.url, task["id"], timeout=120)
    assert time.monotonic() - died < 30, "the task stayed running long after purple died"
    assert done["status"] == "failed" and done["failure_kind"] == "agent", done
    assert done["end_reason"] == "purple_lost"
    expected = "no longer knows its task" if restart else "has not answered"
    assert expected in done["error"] and purple.url in done["error"]
    assert _containers_of(docker_client, task["id"]) == []


def _scripted_purple_on(port: int, tmp_path: Path, script: Script) -> ThreadedServer:
    settings = PurpleSettings(
        port=port,
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )
    policy = ScriptedPolicy(script, Observed())
    return ThreadedServer(create_purple(settings, make_policy=lambda kind="rca_task": policy), port)


def test_a_short_purple_outage_is_retried_before_tasks_fail(start_green, tmp_path: Path):
    port = free_port()  # nobody listens yet: connection refused
    green = start_green(purple_url=f"http://127.0.0.1:{port}", purple_start_retry_s=30)
    ids = [submit_task(green.url, {"task": "arvo:900001"})["id"] for _ in range(3)]
    wait_status(green.url, ids[0], "running")
    time.sleep(5)
    purple = _scripted_purple_on(
        port, tmp_path, Script(commands=["true"], submissions=[perfect_file_and_function(900001)])
    ).start()
    try:
        for task_id in ids:
            done = wait_terminal(green.url, task_id, timeout=120)
            assert done["status"] == "completed", done
    finally:
        purple.stop()


def test_a_purple_dropping_connections_as_it_restarts_is_retried_too(start_green, tmp_path: Path):
    """Purple killed while green hands it a task: the connection is accepted, then dropped
    without an answer (no "connection refused"). The card was not read, so no message reached
    purple: green retries as for a refused connection (it used to fail the task as the agent's
    ``purple_unreachable`` at once)."""
    port = free_port()
    dropper = socket.create_server(("127.0.0.1", port))
    dropping = threading.Event()

    def drop() -> None:
        while not dropping.is_set():
            with contextlib.suppress(OSError):
                conn, _ = dropper.accept()
                conn.recv(65536)
                conn.close()

    dropper_thread = threading.Thread(target=drop, daemon=True)
    dropper_thread.start()
    green = start_green(purple_url=f"http://127.0.0.1:{port}", purple_start_retry_s=30)
    task_id = submit_task(green.url, {"task": "arvo:900001"})["id"]
    wait_status(green.url, task_id, "running")
    time.sleep(3)
    dropping.set()
    dropper.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
    dropper.close()
    dropper_thread.join(10)
    purple = _scripted_purple_on(
        port, tmp_path, Script(commands=["true"], submissions=[perfect_file_and_function(900001)])
    ).start()
    try:
        done = wait_terminal(green.url, task_id, timeout=120)
        assert done["status"] == "completed", done
    finally:
        purple.stop()


def test_unreachable_purple_fails_tasks_as_never_started(start_green):
    green = start_green(purple_url=f"http://127.0.0.1:{free_port()}", purple_start_retry_s=2)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["status"] == "failed" and done["end_reason"] == "purple_unreachable", done
    assert "could not be reached" in done["error"]


def test_a_command_green_cannot_record_ends_the_task_as_infra(
    start_green, scripted_purple, green_settings
):
    """When green's database refuses a command's row (a trigger in green's real SQLite file),
    the task ends as green's failure, never the agent's, and the agent learns nothing of the
    database (the row is written behind the command's answer: the first command is answered,
    then the task ends)."""
    purple_url, seen = scripted_purple(Script(commands=["echo one", "echo two"], submit=False))
    green = start_green(purple_url=purple_url)
    db = sqlite3.connect(green_settings.database_url.removeprefix("sqlite:///"))
    with db:
        db.execute(
            "CREATE TRIGGER refuse_commands BEFORE INSERT ON commands"
            " BEGIN SELECT RAISE(ABORT, 'no room for commands'); END"
        )
    db.close()
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert (done["failure_kind"], done["end_reason"]) == ("infra", "storage"), done
    assert [r.output for r in seen.results] in ([], ["one\n"], ["one\n", "two\n"]), seen.results
    said = " ".join([*seen.endings, *(r.output for r in seen.results)]).lower()
    assert "sqlite" not in said and "integrity" not in said and "room" not in said, said
    assert done["steps"] == 0, done  # no row was written
