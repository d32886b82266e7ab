"""Another process holds an exclusive lock on green's database for 10 s (SQLite: the file's write
lock; PostgreSQL: ``LOCK TABLE … IN ACCESS EXCLUSIVE MODE`` on the task tables), twice the
deadline of green's statements, while a task runs. A real green process, a real purple:

- the agent card and ``/healthz`` keep answering, and ``/healthz`` says the database is
  degraded (their latency is printed: green's event loop never waits on the database);
- the running task's commands keep being answered (their rows land once the lock is gone);
- the task then completes, every command recorded, nothing charged to the agent.

Green froze for the whole lock before: its writes ran on its event loop (the card took 9.97 s).
"""

from __future__ import annotations

import sqlite3
import statistics
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text

from services.shared.db import connect_engine
from tests.integration.helpers import OPERATOR, submit_task, wait_status, wait_terminal
from tests.integration.test_green_replicas import green_env
from tests.support import web
from tests.support.scripted_purple import Script
from tests.support.servers import ServiceProcess, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LOCK_S = 10.0
GOOD_LOC = {"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}


@contextmanager
def exclusive_lock(url: str):
    """Hold the database's write lock (and, on PostgreSQL, every lock of the task tables)."""
    if url.startswith("sqlite"):
        holder = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return
    engine = connect_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("LOCK TABLE task_contexts, commands IN ACCESS EXCLUSIVE MODE"))
            try:
                yield
            finally:
                conn.rollback()
    finally:
        engine.dispose()


class Prober(threading.Thread):
    """Asks for the card and ``/healthz`` over and over; keeps each latency and what health said."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url = url
        self.card_s: list[float] = []
        self.health_s: list[float] = []
        self.health: list[tuple[float, bool]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            t0 = time.monotonic()
            web.get(f"{self.url}/.well-known/agent-card.json", timeout=30).raise_for_status()
            t1 = time.monotonic()
            answer = web.get(f"{self.url}/healthz", timeout=30)
            t2 = time.monotonic()
            self.card_s.append(t1 - t0)
            self.health_s.append(t2 - t1)
            self.health.append((t2, answer.json()["database"]))
            time.sleep(0.05)


def _figures(name: str, seconds: list[float]) -> str:
    ms = sorted(s * 1000 for s in seconds)
    p95 = ms[int(0.95 * (len(ms) - 1))]
    return f"{name}: {len(ms)} answers, median {statistics.median(ms):.1f} ms, p95 {p95:.1f} ms, max {ms[-1]:.1f} ms"


def test_a_locked_database_freezes_neither_the_card_nor_health_nor_running_commands(
    database_url: str, green_settings, scripted_purple, tmp_path: Path
) -> None:
    script = Script(commands=["true"] * 200, pause_s=0.1, submissions=[GOOD_LOC])
    purple_url, observed = scripted_purple(script)
    port = free_port()
    green = ServiceProcess(
        "services.green",
        port,
        {
            **green_env(green_settings, database_url, f"lock-{port}"),
            "GREEN_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "GREEN_PURPLE_URL": purple_url,
            "GREEN_MAX_STEPS": "1000",
            "GREEN_CONTAINER_MEMORY": "512m",
        },
        tmp_path / "green.out",
    ).start()
    prober = Prober(green.url)
    try:
        task = submit_task(green.url, {"task": "arvo:900001"})
        wait_status(green.url, task["id"], "running")
        while len(observed.results) < 5:  # the agent is at work
            time.sleep(0.05)
        prober.start()
        time.sleep(1)
        with exclusive_lock(database_url):
            locked_at, answered_before = time.monotonic(), len(observed.results)
            time.sleep(LOCK_S)
            answered_during = len(observed.results) - answered_before
            released_at = time.monotonic()
        time.sleep(2)
        prober.stop.set()
        prober.join(30)
        done = wait_terminal(green.url, task["id"], timeout=300)
        commands = web.get(
            f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR, params={"limit": 5000}
        ).json()
    finally:
        prober.stop.set()
        green.stop()

    print(
        f"\n{database_url.split(':')[0]}: {LOCK_S:g} s lock; commands answered meanwhile: {answered_during}"
    )
    print(_figures("agent card", prober.card_s))
    print(_figures("/healthz", prober.health_s))
    degraded = [t for t, ok in prober.health if locked_at <= t <= released_at and not ok]
    assert answered_during >= 10, answered_during  # about one every 0.1 s plus its round trip
    assert degraded, "health never said the database was degraded during the lock"
    assert done["status"] == "completed", done
    assert len(commands) == done["steps"] == len(observed.results) + 1  # + writing loc.json
