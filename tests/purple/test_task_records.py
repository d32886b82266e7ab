"""Purple's tasks served from files (services/purple/task_index.py), over real HTTP and A2A: an
unknown id, hostile ids, a trajectory read while it is written, concurrent tasks, and a purple
that restarts (cleanly or after a crash) serving the tasks it had."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from a2a.types import Role

from services.purple.api.tasks import commands_of
from services.purple.app import create_app
from services.purple.commands import CommandRecord
from services.purple.config import PurpleSettings
from services.purple.protocols import RunResult, TaskContext
from services.purple.task_index import TaskIndex, TaskRecord, TrajectoryFile, key_of
from services.purple.trajectory import Trajectory
from services.shared.a2a import A2APeer, new_protocol_message
from services.shared.commands import CommandResult
from tests.integration.helpers import wait_until
from tests.support import web
from tests.support.servers import free_port, serve

REPO = Path(__file__).resolve().parents[2]
HOSTILE_IDS = [
    "..",
    "../../etc/passwd",
    "a\x00b",
    "x" * 200,
    "y" * 1000,  # past a file name's 255 bytes: the log file is named by a hash too
    "A-UPPER",
    "a/b",
    "a_b",
    "..\\x",
    "\u00e9t\u00e9",
]
"""Context ids an A2A caller may choose (none is a lower-case id: each is filed by its hash)."""


class GatedPolicy:
    """Opens its trajectory, runs one command, then waits until the test releases its task."""

    name = "gated"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.released: set[str] = set()
        self.lock = threading.Lock()

    def release(self, task_id: str) -> None:
        with self.lock:
            self.released.add(task_id)

    async def run(self, task: TaskContext) -> RunResult:
        traj = Trajectory(self.directory, task.task_id, self.name)
        task.commands.trajectory = traj
        traj.event("start", prompts={"system": "Find it.", "instance": task.description})
        traj.event("message", step=1, role="assistant", content=f"look at {task.task_id}")
        task.commands.record(
            CommandRecord(step=1, command=f"ls {task.task_id}", exit_code=0, duration_s=0.25),
            CommandResult(exit_code=0, output="error.txt\n"),
        )
        while task.task_id not in self.released:
            await asyncio.sleep(0.02)
        traj.finish(messages=[{"role": "system", "content": "Find it."}])
        return RunResult(
            task_id=task.task_id,
            policy=self.name,
            status="error",
            reason="gave up",
            stats=task.usage,
            trajectory_path=str(traj.final_path),
        )


def _settings(tmp_path: Path, port: int) -> PurpleSettings:
    return PurpleSettings(
        port=port,
        policy="stacktrace",
        green_url="http://127.0.0.1:9",  # a plain-text task's green; the policy never calls it
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )


def purple(tmp_path: Path, policy: GatedPolicy | None = None):
    """A purple on ``tmp_path/traj`` (the same folder at each call: a restart), served."""
    port = free_port()
    make = (lambda kind="rca_task": policy) if policy else None
    return serve(create_app(_settings(tmp_path, port), make_policy=make), port)


def send_task(url: str, task_id: str) -> None:
    """A plain-text task in A2A context ``task_id`` (the id purple files it under)."""

    async def go() -> None:
        peer = A2APeer(url)
        try:
            message = new_protocol_message(
                "Find the root cause.", None, context_id=task_id, role=Role.ROLE_USER
            )
            await peer.send(message, return_immediately=True)
        finally:
            await peer.aclose()

    asyncio.run(go())


def get(url: str) -> dict:
    r = web.get(url)
    assert r.status_code == 200, r.text
    return r.json()


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file()}


def test_an_unknown_id_is_a_404_on_every_route(tmp_path: Path) -> None:
    with purple(tmp_path) as srv:
        for path in ("/tasks/nope", "/tasks/nope/trajectory"):
            r = web.get(f"{srv.url}{path}")
            assert (r.status_code, r.json()) == (404, {"detail": "no task nope"})
        assert get(f"{srv.url}/tasks") == []
        assert web.get(f"{srv.url}/tasks?limit=x").status_code == 422


def test_hostile_ids_in_urls_are_404s_and_reach_no_file(tmp_path: Path) -> None:
    with purple(tmp_path) as srv:
        for raw, detail in (
            ("%2e%2e", "no task .."),  # a bare .. is resolved away by the client
            ("..%2Fsecret", "Not Found"),  # a slash is no task id: no route
            ("..%2F..%2Fsecret", "Not Found"),
            ("a%00b", "no task a\x00b"),
            ("x" * 5000, "no task " + "x" * 5000),
        ):
            for suffix in ("", "/trajectory"):
                r = web.get(f"{srv.url}/tasks/{raw}{suffix}")
                assert (r.status_code, r.json()["detail"]) == (404, detail), raw
    assert not (tmp_path / "traj" / "tasks").exists()  # reading made nothing


def test_hostile_ids_from_a2a_are_filed_inside_the_folder_and_kept_apart(tmp_path: Path) -> None:
    policy = GatedPolicy(tmp_path / "traj")
    before = files_under(tmp_path)
    with purple(tmp_path, policy) as srv:
        for task_id in HOSTILE_IDS:
            send_task(srv.url, task_id)
        index = TaskIndex(tmp_path / "traj")
        wait_until(lambda: all(index.get(i) for i in HOSTILE_IDS), "purple never filed them")
        for task_id in HOSTILE_IDS:
            policy.release(task_id)
        wait_until(lambda: all(index.get(i).status == "failed" for i in HOSTILE_IDS), "never ended")
        listed = get(f"{srv.url}/tasks?limit=1000")
    made = files_under(tmp_path) - before
    assert all((tmp_path / "traj") in p.parents or (tmp_path / "logs") in p.parents for p in made)
    records = sorted(p.name for p in (tmp_path / "traj" / "tasks").iterdir())
    assert records == sorted(f"{key_of(i)}.json" for i in HOSTILE_IDS)
    assert all(r.startswith("_") for r in records)  # none is the id itself
    assert sorted(t["id"] for t in listed) == sorted(HOSTILE_IDS)
    # each id has trajectory files of its own ("a/b" and "a_b" share none), none hidden
    files = [index.files(index.get(i)) for i in HOSTILE_IDS]
    names = [path.name for each in files for path, _ in each]
    assert len(names) == len(set(names)) == len(HOSTILE_IDS)
    assert all(not n.startswith(".") for n in names)
    for task_id in HOSTILE_IDS:
        assert [c.command for c in commands_of(index, index.get(task_id))] == [f"ls {task_id}"]
    assert {key_of("a/b"), key_of("A-UPPER")} & {key_of("a_b"), key_of("a-upper")} == set()


def test_a_planted_record_never_answers_for_another_id_nor_names_a_file_outside(
    tmp_path: Path,
) -> None:
    index = TaskIndex(tmp_path / "traj")
    index.put(TaskRecord(id="mine", green_url="x", policy="p"))
    secret = {"id": "../secret", "green_url": "x", "policy": "p"}  # where ../ would lead
    (tmp_path / "traj" / "secret.json").write_text(json.dumps(secret))
    assert index.get("../secret") is None
    planted = index.tasks / f"{key_of('other')}.json"
    planted.write_bytes((index.tasks / "mine.json").read_bytes())  # says id "mine"
    assert index.get("other") is None and index.get("mine") is not None
    (tmp_path / "outside.events.jsonl").write_text('{"type": "command", "command": "x"}\n')
    record = index.get("mine")
    record.trajectories = [
        TrajectoryFile(events=name, started_at=record.created_at)
        for name in ("../outside.events.jsonl", ".hidden", "/etc/passwd")
    ]
    index.put(record)
    assert index.files(index.get("mine")) == []


def test_a_trajectory_read_while_it_is_being_written(tmp_path: Path) -> None:
    policy = GatedPolicy(tmp_path / "traj")
    with purple(tmp_path, policy) as srv:
        send_task(srv.url, "t-live")
        url = f"{srv.url}/tasks/t-live"
        wait_until(lambda: web.get(url).status_code == 200 and get(url)["command_count"], "no cmd")
        events = tmp_path / "traj" / "t-live.gated.events.jsonl"
        with events.open("a") as f:  # a writer caught mid-line
            f.write('{"type": "command", "step": 1, "command": "half of a li')
        traj = get(f"{url}/trajectory")
        assert traj["status"] == "working" and traj["files"] == [events.name]
        assert [c["command"] for s in traj["steps"] for c in s["commands"]] == ["ls t-live"]
        assert traj["prompts"]["instance"] == "Find the root cause."
        view = get(url)
        assert (view["status"], view["command_count"], view["messages"]) == ("working", 1, None)
        assert [c["command"] for c in view["command_history"]] == ["ls t-live"]
        with events.open("a") as f:
            f.write('ne"}\n')  # the line completed
        policy.release("t-live")
        wait_until(lambda: get(url)["status"] == "failed", "the task never ended")
        done = get(url)
        assert done["reason"] == "gave up" and done["command_count"] == 1
        assert done["messages"] == [{"role": "system", "content": "Find it."}]
        steps = get(f"{url}/trajectory")["steps"]
        assert [c["command"] for s in steps for c in s["commands"]] == [
            "ls t-live",
            "half of a line",
        ]


def test_concurrent_tasks_each_get_their_own_record_and_trajectory(tmp_path: Path) -> None:
    policy = GatedPolicy(tmp_path / "traj")
    ids = [f"c-{n}" for n in range(12)]
    with purple(tmp_path, policy) as srv:
        threads = [threading.Thread(target=send_task, args=(srv.url, i)) for i in ids]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        wait_until(
            lambda: all(web.get(f"{srv.url}/tasks/{i}").status_code == 200 for i in ids),
            "purple never filed every task",
        )
        for i in ids:
            policy.release(i)
        wait_until(
            lambda: all(get(f"{srv.url}/tasks/{i}")["status"] == "failed" for i in ids),
            "the tasks never ended",
        )
        for i in ids:
            traj = get(f"{srv.url}/tasks/{i}/trajectory")
            assert traj["files"] == [f"{i}.gated.events.jsonl"]
            assert [c["command"] for s in traj["steps"] for c in s["commands"]] == [f"ls {i}"]
        assert sorted(t["id"] for t in get(f"{srv.url}/tasks")) == sorted(ids)
    assert list((tmp_path / "traj" / "working").iterdir()) == []  # every marker gone


def test_a_restarted_purple_serves_the_tasks_it_had(tmp_path: Path) -> None:
    policy = GatedPolicy(tmp_path / "traj")
    with purple(tmp_path, policy) as first:
        send_task(first.url, "t-done")
        send_task(first.url, "t-cut")
        wait_until(lambda: web.get(f"{first.url}/tasks/t-cut").status_code == 200, "not filed")
        policy.release("t-done")
        wait_until(lambda: get(f"{first.url}/tasks/t-done")["status"] == "failed", "not ended")
        before = get(f"{first.url}/tasks/t-done/trajectory")
    # stopped mid-task: the job recorded its cancel; a new purple on the folder serves both
    with purple(tmp_path) as again:
        assert get(f"{again.url}/tasks/t-done/trajectory") == before
        cut = get(f"{again.url}/tasks/t-cut")
        assert (cut["status"], cut["reason"], cut["command_count"]) == (
            "cancelled",
            "purple shut down",
            1,
        )
        traj = get(f"{again.url}/tasks/t-cut/trajectory")
        assert traj["status"] == "cancelled" and traj["files"] == ["t-cut.gated.events.jsonl"]
        assert {t["id"] for t in get(f"{again.url}/tasks")} == {"t-done", "t-cut"}


CRASHED = """
import os, sys
from services.purple.task_index import TaskIndex, TaskRecord
from services.purple.trajectory import Trajectory
index = TaskIndex(sys.argv[1])
record = TaskRecord(id="t-crash", green_url="http://green", policy="gated")
index.start(record)
traj = Trajectory(sys.argv[1], "t-crash", "gated")
index.opened(record, traj)
traj.event("command", step=1, command="ls", exit_code=0)
os._exit(0)  # no end, no close: what a kill -9 leaves
"""


def test_after_a_crash_the_task_is_failed_and_its_trajectory_still_served(tmp_path) -> None:
    traj_dir = tmp_path / "traj"
    subprocess.run([sys.executable, "-c", CRASHED, str(traj_dir)], cwd=REPO, check=True)
    alive = TaskIndex(traj_dir)  # another purple on the folder, alive, with a task under way
    alive.start(TaskRecord(id="t-alive", green_url="http://green", policy="gated"))
    try:
        with purple(tmp_path) as srv:
            crashed = get(f"{srv.url}/tasks/t-crash")
            assert (crashed["status"], crashed["reason"]) == ("failed", "interrupted by restart")
            assert crashed["finished_at"] and crashed["command_count"] == 0
            assert [c["command"] for c in crashed["command_history"]] == ["ls"]
            traj = get(f"{srv.url}/tasks/t-crash/trajectory")
            assert traj["status"] == "failed" and traj["files"] == ["t-crash.gated.events.jsonl"]
            assert get(f"{srv.url}/tasks/t-alive")["status"] == "working"  # not another's to fail
    finally:
        alive.close()
    assert [p for p in (traj_dir / "working").iterdir()] != []  # the live one's folder stays


@pytest.mark.parametrize("task_id", ["3f2b7c1e-0d9a-4c55-9a59-6f0d0c3f2a10", "t-1"])
def test_a_green_id_is_its_own_file_name(task_id: str) -> None:
    assert key_of(task_id) == task_id
