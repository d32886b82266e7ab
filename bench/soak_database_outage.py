"""Soak: two green replicas on one PostgreSQL, a few hundred cheap tasks, the database restarted
twice mid-run. What it checks is what "the database may fail" must keep true:

- every task ends: none under way at a fault is left unended 2 minutes after the last fault,
  and the whole queue drains (how long after the last fault is printed);
- no slot is lost: no task is held by a replica after the run, and a full batch afterwards runs
  on every slot of both replicas at once;
- the outage is never the agent's: agent-attributed failures are counted (a scripted purple that
  always submits a valid answer has none of its own);
- every answer is JSON: a prober reads both replicas' REST API all along and counts 5xx answers
  that are not JSON (and 503s, which are expected while the database is down).

    .venv/bin/python bench/soak_database_outage.py [--tasks 210] [--outage-s 6] [--lease-s 10]

The tasks are the fixtures' (``python -m fixtures.build``) and purple runs a fixed script: three
commands and a valid ``loc.json``. Needs Docker and Debian's ``postgresql`` (a private cluster on
a free port is started and removed). Not part of the test suite (minutes of run time); the
short version is tests/integration/test_database_outage.py.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fixtures.catalog import DEFAULT_ASSETS_DIR, IMAGE_TEMPLATE
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.support.postgres import PostgresCluster
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy
from tests.support.servers import ServiceProcess, ThreadedServer, free_port

TOKEN = "soak-operator-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IDS = ["900001", "900002", "900003", "900004"]
TERMINAL = {"completed", "failed", "cancelled"}
HELD = {"preparing", "running", "evaluating"}
GOOD_LOC = {"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}


def start_purple(tmp: Path, script: Script) -> tuple[ThreadedServer, Observed]:
    observed = Observed()
    port = free_port()
    settings = PurpleSettings(
        port=port,
        database_url=f"sqlite:///{tmp}/purple-{port}.db",
        log_dir=tmp / "logs",
        trajectory_dir=tmp / "traj",
        max_concurrent_tasks=64,
    )
    app = create_purple(
        settings, make_policy=lambda kind="rca_task": ScriptedPolicy(script, observed)
    )
    return ThreadedServer(app, port).start(), observed


def start_green(tmp: Path, db_url: str, name: str, purple: str, args) -> ServiceProcess:
    port = free_port()
    env = {
        "GREEN_ASSET_SOURCE": str(DEFAULT_ASSETS_DIR),
        "GREEN_IMAGE_TEMPLATE": IMAGE_TEMPLATE,
        "GREEN_DATABASE_URL": db_url,
        "GREEN_LOG_DIR": str(tmp / "logs"),
        "GREEN_ASSET_CACHE_DIR": str(tmp / "cache"),
        "GREEN_INSTANCE_NAME": name,
        "GREEN_API_TOKEN": TOKEN,
        "GREEN_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "GREEN_PURPLE_URL": purple,
        "GREEN_PURPLE_ALLOWLIST": '["http://127.0.0.1:*"]',
        "GREEN_PURPLE_POLL_S": "0.5",
        "GREEN_LEASE_S": str(args.lease_s),
        "GREEN_QUEUE_POLL_S": "0.5",
        "GREEN_MAX_CONCURRENT_TASKS": str(args.slots),
        "GREEN_CONTAINER_MEMORY": "512m",
        "GREEN_INTAKE_PER_MINUTE": "100000",
    }
    return ServiceProcess("services.green", port, env, tmp / f"{name}.out").start(timeout=120)


class Prober(threading.Thread):
    """Reads the REST API of every replica all along; counts the answers by kind."""

    def __init__(self, urls: list[str], task_ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.urls, self.task_ids = urls, task_ids
        self.counts: collections.Counter[str] = collections.Counter()
        self.plain: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=30, headers=AUTH) as client:
            while not self.stop.is_set():
                url = random.choice(self.urls)
                path = random.choice(
                    ["/healthz", "/tasks?limit=5", f"/tasks/{random.choice(self.task_ids)}"]
                )
                try:
                    r = client.get(url + path)
                except httpx.HTTPError as exc:
                    self.counts[f"transport:{type(exc).__name__}"] += 1
                    continue
                self.counts[str(r.status_code)] += 1
                if r.status_code >= 500:
                    try:
                        r.json()
                    except ValueError:
                        self.plain.append(f"{r.status_code} {path}: {r.text[:100]}")
                time.sleep(0.1)


def tasks(url: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    offset = 0
    while True:
        page = httpx.get(
            f"{url}/tasks", headers=AUTH, params={"limit": 200, "offset": offset}, timeout=60
        ).json()
        out.update({t["id"]: t for t in page["items"]})
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return out


def wait_for(what, timeout: float, period: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            if result := what():
                return result
        time.sleep(period)
    return None


def outage(pg: PostgresCluster, url: str, seconds: float) -> tuple[float, set[str]]:
    """Stop the server for ``seconds``; returns when it was back and the tasks held at the stop."""
    held = {i for i, t in tasks(url).items() if t["status"] in HELD}
    pg.stop_server("fast")
    time.sleep(seconds)
    pg.start_server()
    return time.monotonic(), held


def run(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="soak-db-"))
    pg = PostgresCluster().start()
    db_url = pg.new_database("soak")
    script = Script(
        commands=["ls /workspace", "sleep 1", "true"], pause_s=0.2, submissions=[GOOD_LOC]
    )
    purple, _ = start_purple(tmp, script)
    slow, _ = start_purple(
        tmp, Script(commands=["sleep 1"] * 60, pause_s=0.5, submissions=[GOOD_LOC])
    )
    greens = [start_green(tmp, db_url, n, purple.url, args) for n in ("soak-a", "soak-b")]
    urls = [g.url for g in greens]
    try:
        held_before = sum(t["status"] in HELD for t in tasks(urls[0]).values())
        t0 = time.monotonic()
        ids = []
        for i in range(args.tasks):
            r = httpx.post(
                f"{urls[i % 2]}/tasks",
                headers=AUTH,
                json={"task": f"arvo:{IDS[i % 4]}"},
                timeout=60,
            )
            r.raise_for_status()
            ids.append(r.json()["id"])
        prober = Prober(urls, ids)
        prober.start()
        faults, held_at_faults = [], set()
        for share in args.faults_at:
            wait_for(
                lambda s=share: (
                    sum(t["status"] in TERMINAL for t in tasks(urls[0]).values()) >= s * len(ids)
                ),
                1800,
            )
            back, held = outage(pg, urls[0], args.outage_s)
            faults.append(back - t0)
            held_at_faults |= held
            print(
                f"database restarted at {back - t0:.0f} s ({len(held)} tasks under way)", flush=True
            )
        last = t0 + faults[-1]
        wait_for(
            lambda: all(tasks(urls[0])[i]["status"] in TERMINAL for i in held_at_faults),
            120 - (time.monotonic() - last),
        )
        now = tasks(urls[0])
        unended_held = [i for i in held_at_faults if now[i]["status"] not in TERMINAL]
        drained = wait_for(
            lambda: all(t["status"] in TERMINAL for t in tasks(urls[0]).values()), 1800
        )
        drained_after = time.monotonic() - last
        prober.stop.set()
        prober.join(30)
        ended = tasks(urls[0])
        held_after = sum(t["status"] in HELD for t in ended.values())
        ends = collections.Counter(
            (t["status"], t["failure_kind"], t["end_reason"]) for t in ended.values()
        )
        agent = sum(t["failure_kind"] == "agent" for t in ended.values())

        # capacity: a full batch runs on every slot of both replicas at once
        batch = [
            httpx.post(
                f"{urls[i % 2]}/tasks",
                headers=AUTH,
                json={"task": f"arvo:{IDS[i % 4]}", "purple_url": slow.url},
                timeout=60,
            ).json()["id"]
            for i in range(2 * args.slots)
        ]

        def full():
            now = tasks(urls[0])
            on = collections.Counter(
                now[i]["instance"] for i in batch if now[i]["status"] == "running"
            )
            return on if on["soak-a"] == args.slots and on["soak-b"] == args.slots else None

        full_at_once = wait_for(full, 180, 0.5)
        for i in batch:
            httpx.post(f"{urls[0]}/tasks/{i}/cancel", headers=AUTH, timeout=30)
        wait_for(lambda: all(tasks(urls[0])[i]["status"] in TERMINAL for i in batch), 120)
    finally:
        for g in greens:
            g.stop()
        purple.stop()
        slow.stop()
        pg.stop()
    at = ", ".join(f"{f:.0f} s" for f in faults)
    print(
        f"tasks: {len(ids)}; database stopped {len(faults)} times for {args.outage_s:g} s, back at {at}"
    )
    print(
        f"tasks under way at a fault: {len(held_at_faults)}; not ended 2 min after the last fault: {len(unended_held)}"
    )
    print(f"whole queue ended: {bool(drained)} ({drained_after:.0f} s after the last fault)")
    print(
        f"slots in use before: {held_before}, after: {held_after}; full batch on both replicas at once: {dict(full_at_once or {})}"
    )
    print(f"agent-attributed failures: {agent}")
    print("ends:", dict(ends))
    print(
        f"prober answers: {dict(prober.counts)}; plain-text 5xx: {len(prober.plain)} {prober.plain[:5]}"
    )
    ok = (
        not unended_held
        and drained
        and held_after == held_before
        and full_at_once
        and agent == 0
        and not prober.plain
    )
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=210)
    p.add_argument("--outage-s", type=float, default=6.0)
    p.add_argument("--lease-s", type=float, default=10.0)
    p.add_argument("--slots", type=int, default=4)
    p.add_argument(
        "--faults-at",
        type=lambda v: [float(x) for x in v.split(",")],
        default=[0.3, 0.8],
        help="restart the database when these shares of the tasks have ended (default 0.3,0.8)",
    )
    return run(p.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
