"""The database fails mid-run: two real green processes on a PostgreSQL server of the test's own,
real containers, a scripted purple. The server is stopped (``pg_ctl stop -m fast``) for 6 s while
tasks are preparing, running and being evaluated, then started again, and:

- every task that was under way reaches an end within the lease and a few polls of the
  database's return (none stays ``running``/``preparing`` with its lease renewed for good);
- no slot is lost: afterwards each replica runs as many tasks at once as before;
- attribution follows the rule: a task the outage ended is infra, never the agent's;
- nothing the agent received names the database (it gets one generic sentence);
- during the outage every answer is JSON: REST 503 with ``Retry-After``, ``/healthz`` says the
  database is unreachable, an A2A intake is a JSON-RPC error, and intake creates nothing.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import docker
import pytest

from services.green.store.errors import AGENT_SENTENCE
from tests.integration.helpers import OPERATOR, TERMINAL, rpc, text_message
from tests.integration.test_replicas import HELD, IDS, LEASE_S, _replica, _tasks, _until
from tests.support import web
from tests.support.containers import container_names
from tests.support.scripted_purple import Script

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SLOTS = 3
OUTAGE_S = 6.0
GOOD_LOC = {"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}
ALLOW = {"GREEN_PURPLE_ALLOWLIST": '["http://127.0.0.1:*"]'}


def forbidden_words(port: int | None) -> list[str]:
    """What would tell the agent about green's database."""
    words = ["sqlalchemy", "psycopg", "postgres", "operationalerror", "sqlite", "locked"]
    return [*words, f":{port}"] if port else words


def assert_agent_saw_nothing_internal(observed, traj_dir: Path, port: int | None) -> None:
    seen = [r.output for r in observed.results]
    seen += [json.dumps(r.model_dump()) for r in observed.submit_replies]
    seen += observed.endings
    seen += [p.read_text(errors="replace") for p in traj_dir.rglob("*") if p.is_file()]
    text = "\n".join(seen).lower()
    for word in forbidden_words(port):
        assert word not in text, f"the agent received {word!r}"


def probe_outage(a_url: str, b_url: str, task_id: str, port: int) -> int:
    """Every answer while the database is down: JSON, 503 + Retry-After; returns how many
    intakes were accepted (must be none)."""
    accepted = 0
    r = web.get(f"{a_url}/tasks/{task_id}", headers=OPERATOR, timeout=30)
    assert r.status_code == 503 and r.headers.get("retry-after"), (r.status_code, r.text)
    assert "database" in r.json()["detail"], r.text
    r = web.post(f"{b_url}/tasks", headers=OPERATOR, json={"task": "arvo:900001"}, timeout=30)
    accepted += r.status_code == 202
    assert r.status_code == 503 and r.headers.get("retry-after"), (r.status_code, r.text)
    r = web.get(f"{a_url}/tasks", headers=OPERATOR, timeout=30)
    assert r.status_code == 503 and r.json()["detail"], r.text
    health = web.get(f"{b_url}/healthz", timeout=30)
    assert health.status_code == 503 and health.json()["database"] is False, health.text
    page = web.get(f"{a_url}/ui", headers={**OPERATOR, "Accept": "text/html"}, timeout=30)
    assert not page.headers["content-type"].startswith("text/plain"), page.text
    if page.status_code >= 500:
        assert page.status_code == 503 and "database" in page.text, page.text
    params = {"message": text_message("Task ID: arvo:900001"), "configuration": {"blocking": False}}
    body = rpc(a_url, "message/send", params, headers=OPERATOR)
    answer = body.json()
    accepted += "result" in answer
    assert "error" in answer, answer
    text = json.dumps(answer).lower()
    for word in forbidden_words(port):
        assert word not in text, answer
    return accepted


def post(url: str, ref_id: str, **body: str) -> str:
    r = web.post(f"{url}/tasks", headers=OPERATOR, json={"task": f"arvo:{ref_id}", **body})
    assert r.status_code == 202, r.text
    return r.json()["id"]


def preparing(url: str) -> dict[str, dict] | None:
    """Every task (one query), when one of them is being prepared while another runs (on a
    slow machine the first tasks may all be evaluating when the next is prepared: wait on)."""
    r = web.get(f"{url}/tasks", headers=OPERATOR, params={"limit": 100}, timeout=10)
    tasks = {t["id"]: t for t in r.json()["items"]}
    now = {t["status"] for t in tasks.values()}
    return tasks if {"preparing", "running"} <= now else None


def test_tasks_end_and_slots_return_after_a_postgres_outage(
    green_settings,
    own_postgres,
    scripted_purple,
    docker_client: docker.DockerClient,
    tmp_path,
):
    pg = own_postgres
    db_url = pg.new_database("outage")
    script = Script(
        commands=["sleep 1", "ls /workspace", "sleep 1", "true", "sleep 1"],
        pause_s=0.3,
        submissions=[GOOD_LOC],
    )
    purple_url, observed = scripted_purple(script, max_concurrent_tasks=32)
    slow_url, _ = scripted_purple(
        Script(commands=["sleep 1"] * 40, pause_s=0.5, submissions=[GOOD_LOC]),
        max_concurrent_tasks=32,
    )
    replicas = [
        _replica(green_settings, db_url, name, purple_url, tmp_path, slots=SLOTS)
        for name in ("outage-a", "outage-b")
    ]
    for r in replicas:
        r.env.update(ALLOW)
    a, b = (r.start() for r in replicas)
    try:
        ids = [post(a.url, IDS[i % 4]) for i in range(6)]
        _until(
            lambda: sum(t["status"] == "running" for t in _tasks(a.url, ids).values()) >= 4,
            120,
            "tasks did not start",
        )
        ids += [post(a.url, IDS[i % 4]) for i in range(8)]  # claimed into the free slots
        # stop the server the moment a task is being prepared (others are running)
        before = _until(
            lambda: preparing(a.url), 90, "no task was preparing while another ran", period=0.02
        )
        pg.stop_server("fast")
        under_way = [i for i, t in before.items() if t["status"] in HELD]
        print("at the outage:", sorted(t["status"] for t in before.values()))
        assert {"preparing", "running"} <= {t["status"] for t in before.values()}, before
        down_at = time.monotonic()
        accepted = probe_outage(a.url, b.url, ids[0], pg.port)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))
        pg.start_server()
        back_at = time.monotonic()
        assert accepted == 0, "an intake was accepted while the database was down"

        # every task under way ends within the lease and a few polls (plus its short script)
        deadline = LEASE_S + 15
        _until(
            lambda: all(t["status"] in TERMINAL for t in _tasks(a.url, under_way).values()),
            deadline,
            f"tasks under way did not end: {_tasks(a.url, under_way)}",
            period=0.5,
        )
        print(f"database back -> every task under way ended: {time.monotonic() - back_at:.1f} s")
        _until(
            lambda: all(t["status"] in TERMINAL for t in _tasks(a.url, ids).values()),
            180,
            f"the queue did not drain: {_tasks(a.url, ids)}",
            period=0.5,
        )
        ended = _tasks(a.url, ids)
        listed = web.get(f"{a.url}/tasks", headers=OPERATOR, params={"limit": 100}, timeout=30)
        assert listed.json()["total"] == len(ids), "intake during the outage created tasks"

        # attribution: completed, or an infra failure; never the agent's
        kinds = sorted((t["status"], t["failure_kind"], t["end_reason"]) for t in ended.values())
        print("ends:", kinds)
        for t in ended.values():
            assert t["status"] == "completed" or (
                t["status"] == "failed" and t["failure_kind"] == "infra"
            ), t
            for word in ("psycopg", "sqlalchemy", f":{pg.port}"):
                assert word not in (t["error"] or "").lower(), t
        assert any(t["failure_kind"] == "infra" for t in ended.values()), "the fault hit nothing"
        assert_agent_saw_nothing_internal(observed, tmp_path / "traj", pg.port)
        refusals = [e for e in observed.endings if AGENT_SENTENCE in e]
        print(f"the agent was refused {len(refusals)} times with the generic sentence")

        # no slot lost: a full batch runs SLOTS at once on each replica
        batch = [post(b.url, IDS[i % 4], purple_url=slow_url) for i in range(2 * SLOTS)]

        def full() -> bool:
            now = _tasks(a.url, batch).values()
            on = [t["instance"] for t in now if t["status"] == "running"]
            return on.count(a.instance) == SLOTS and on.count(b.instance) == SLOTS

        _until(full, 120, f"a replica lost slots: {_tasks(a.url, batch)}", period=0.5)
        for task_id in batch:
            web.post(f"{a.url}/tasks/{task_id}/cancel", headers=OPERATOR, timeout=30)
        _until(
            lambda: all(t["status"] in TERMINAL for t in _tasks(a.url, batch).values()),
            60,
            "the batch did not end",
        )
    finally:
        for r in replicas:
            r.stop()
    left = container_names(docker_client, ["arena.managed=1", f"arena.owner={a.instance}"])
    left += container_names(docker_client, ["arena.managed=1", f"arena.owner={b.instance}"])
    assert left == [], left


BUSY_TIMEOUT_S = 5
"""Green's SQLite busy timeout here, from its URL (30 s by default): how long a write waits."""
LOCK_S = 10.0
"""Longer than that busy timeout: a write waiting for the lock fails."""


def test_tasks_end_and_slots_return_after_a_locked_sqlite_file(
    green_settings, scripted_purple, docker_client: docker.DockerClient, tmp_path
):
    """Another process holds the SQLite file's write lock past green's busy timeout: green's
    writes fail ("database is locked"). A running task's commands are answered meanwhile (their
    rows are retried until they land); a stage that could not be written ends its task as infra.
    Every task ends completed or as infra once the lock is released, the agent learns nothing of
    it, and both slots work afterwards."""
    db_path = tmp_path / "locked.db"
    script = Script(commands=["sleep 1"] * 4, pause_s=0.5, submissions=[GOOD_LOC])
    purple_url, observed = scripted_purple(script, max_concurrent_tasks=8)
    slow_url, _ = scripted_purple(
        Script(commands=["sleep 1"] * 40, pause_s=0.5, submissions=[GOOD_LOC])
    )
    db_url = f"sqlite:///{db_path}?timeout={BUSY_TIMEOUT_S}"
    green = _replica(green_settings, db_url, "locked-a", purple_url, tmp_path, 2)
    green.env.update(ALLOW)
    green.start()
    try:
        ids = [post(green.url, IDS[i]) for i in range(2)]
        _until(
            lambda: all(t["status"] == "running" for t in _tasks(green.url, ids).values()),
            120,
            "tasks did not start",
        )
        holder = sqlite3.connect(db_path, timeout=60, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        time.sleep(LOCK_S)
        holder.execute("ROLLBACK")
        holder.close()
        released = time.monotonic()
        _until(
            lambda: all(t["status"] in TERMINAL for t in _tasks(green.url, ids).values()),
            LEASE_S + 15,
            f"tasks did not end: {_tasks(green.url, ids)}",
            period=0.5,
        )
        print(f"lock released -> tasks ended: {time.monotonic() - released:.1f} s")
        ended = _tasks(green.url, ids)
        print(
            "ends:",
            sorted((t["status"], t["failure_kind"], t["end_reason"]) for t in ended.values()),
        )
        for t in ended.values():
            assert t["status"] == "completed" or (
                t["status"] == "failed" and t["failure_kind"] == "infra"
            ), t
        assert_agent_saw_nothing_internal(observed, tmp_path / "traj", None)
        for word in ("locked", "sqlite"):
            assert not any(word in e.lower() for e in observed.endings), observed.endings

        batch = [post(green.url, IDS[i], purple_url=slow_url) for i in range(2)]
        _until(
            lambda: all(t["status"] == "running" for t in _tasks(green.url, batch).values()),
            120,
            f"a slot was lost: {_tasks(green.url, batch)}",
        )
        for task_id in batch:
            web.post(f"{green.url}/tasks/{task_id}/cancel", headers=OPERATOR, timeout=30)
    finally:
        green.stop()
    left = container_names(docker_client, ["arena.managed=1", f"arena.owner={green.instance}"])
    assert left == [], left


def test_green_starts_once_a_database_locked_at_its_start_answers(green_settings, tmp_path):
    """Another process holds the SQLite file's write lock as green starts, longer than green's
    database deadline: start-up waits for the database instead of exiting, and green serves
    once the lock is released."""
    db_path = tmp_path / "busy-at-start.db"
    db_url = f"sqlite:///{db_path}"
    first = _replica(green_settings, db_url, "busy-start", "http://127.0.0.1:9", tmp_path)
    first.start()  # migrates the file
    first.stop()
    again = _replica(green_settings, db_url, "busy-start", "http://127.0.0.1:9", tmp_path)
    again.env["GREEN_DATABASE_DEADLINE_S"] = "1"
    holder = sqlite3.connect(db_path, timeout=60, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    released = threading.Timer(LOCK_S, lambda: holder.execute("ROLLBACK"))
    released.start()
    try:
        again.start(timeout=LOCK_S + 60)
        assert web.get(f"{again.url}/healthz", timeout=30).json()["database"] is True
        assert "green.start_waits_for_database" in again.log_path.read_text()
    finally:
        released.join()
        holder.close()
        again.stop()
