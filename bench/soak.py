"""Soak: thousands of tasks through two green replicas on one PostgreSQL, with the faults a long
run meets, and what must stay true after them.

    uv run --frozen --extra postgres python -m bench.soak --tasks 2000 --faults

Two green replicas (``soak-a``, ``soak-b``) share a private PostgreSQL cluster (started on a
free port, removed at the end) and this machine's Docker engine; one purple process runs the
offline analyst; the tasks are the bundled fixtures (``python -m fixtures.build``). A feeder
posts the tasks four at a time (as ``arena run`` does), to either replica, keeping a few dozen
waiting. With ``--faults`` (all of them, or a comma-separated choice), spread over the run:

- ``kill``: replica B is killed (``SIGKILL``) and started again under its name;
- ``stop``: replica A is frozen (``SIGSTOP``) past its lease, then thawed (``SIGCONT``);
- ``purple``: purple is killed and started again on its port (the tasks it was working on, and
  any sent to it while it was down, are the agent's failures, ``purple_lost`` and
  ``purple_unreachable``, by the rule of docs/scoring.md: they are counted apart);
- ``db``: PostgreSQL is stopped twice for ``--outage-s`` seconds.

It prints: tasks ended and unended; how they ended, charged to the agent or to infra; the
containers left; whether every slot came back (nothing held, then a full batch on both replicas
at once); tasks claimed twice; ``POST /tasks`` p50/p95, away from the faults and under them
(and the 503s met during outages); and each service's open files, threads and RSS after its
first 100 tasks (counted from its own start: a restarted process starts again) and at the end,
and on the way (every tenth of the tasks, and after each fault). The feeder posts each task
under an id of its own and sends a refused post, or one whose answer it lost, again as it was:
tasks made twice are counted. Exit status 0 when all hold.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stack import (
    AUTH,
    HELD,
    IDS,
    TERMINAL,
    containers,
    counts,
    freeze_client_heap,
    holds,
    percentiles,
    start_green,
    start_purple,
    start_sleeping_purple,
    tasks,
    wait_for,
)
from tests.support.postgres import PostgresCluster
from tests.support.proc_stats import ProcStats
from tests.support.servers import ServiceProcess

FAULTS = ("kill", "stop", "purple", "db")
BASELINE_AFTER = 100
"""A process's figures are read first once it has served this many tasks (since its start)."""
AFTER_FAULT_S = 10.0
"""A request sent this long after a fault ended is still counted as under it (a restarted
replica's start, a thawed one's backlog, the database's reconnections)."""


@dataclass
class Watched:
    """One service process (one incarnation): its figures after its first tasks and now."""

    name: str
    service: ServiceProcess
    ended_at_start: int = 0
    """Tasks the run had ended when this incarnation started."""
    share: int = 1
    """Processes of its kind sharing the work (two green replicas; one purple)."""
    first: ProcStats | None = None

    def served(self, ended: int) -> int:
        """About how many tasks it has served since it started (its share of those ended)."""
        return (ended - self.ended_at_start) // self.share


class Feeder(threading.Thread):
    """Posts the soak's tasks four at a time to either replica, keeping at most ``ahead``
    waiting; times every accepted ``POST /tasks`` and counts the refused ones."""

    def __init__(self, urls: list[str], total: int, ahead: int) -> None:
        super().__init__(daemon=True)
        self.urls, self.total, self.ahead = urls, total, ahead
        self.ids: list[str] = []
        self.timed: list[tuple[float, float]] = []
        """Each accepted request: when it was sent (``time.monotonic()``) and its seconds."""
        self.refused: collections.Counter[str] = collections.Counter()
        self.unfinished = 0
        self._lock = threading.Lock()
        self.stop = threading.Event()

    def run(self) -> None:
        workers = [threading.Thread(target=self._post, daemon=True) for _ in range(4)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()

    def _post(self) -> None:
        """Each task under an id of the feeder's choosing, posted again as it was until it is
        answered (refused, or its answer lost): green makes it once."""
        body: dict[str, str] | None = None
        with httpx.Client(headers=AUTH, timeout=10) as client:
            while not self.stop.is_set():
                with self._lock:
                    if len(self.ids) >= self.total:
                        return
                    room = self.unfinished < self.ahead
                if not room:
                    time.sleep(0.2)
                    continue
                if body is None:
                    ref = IDS[len(self.ids) % len(IDS)]
                    body = {"id": str(uuid.uuid4()), "task": f"arvo:{ref}"}
                sent, t0 = time.monotonic(), time.perf_counter()
                try:
                    r = client.post(f"{random.choice(self.urls)}/tasks", json=body)
                except httpx.HTTPError as exc:
                    self.refused[type(exc).__name__] += 1
                    time.sleep(0.5)
                    continue
                if r.status_code not in (200, 202):  # 200: a post whose answer was lost
                    self.refused[str(r.status_code)] += 1
                    time.sleep(0.5)
                    continue
                with self._lock:
                    self.timed.append((sent, time.perf_counter() - t0))
                    self.ids.append(r.json()["id"])
                    self.unfinished += 1
                body = None


class Prober(threading.Thread):
    """Reads both replicas' REST API all along; counts answers, and 5xx answers not in JSON."""

    def __init__(self, urls: list[str], feeder: Feeder) -> None:
        super().__init__(daemon=True)
        self.urls, self.feeder = urls, feeder
        self.counts: collections.Counter[str] = collections.Counter()
        self.plain: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(timeout=30, headers=AUTH) as client:
            while not self.stop.is_set():
                some = self.feeder.ids[-50:] or ["none"]
                path = random.choice(
                    ["/healthz", "/tasks?limit=5", f"/tasks/{random.choice(some)}"]
                )
                try:
                    r = client.get(random.choice(self.urls) + path)
                except httpx.HTTPError as exc:
                    self.counts[f"transport:{type(exc).__name__}"] += 1
                    continue
                self.counts[str(r.status_code)] += 1
                if r.status_code >= 500:
                    try:
                        r.json()
                    except ValueError:
                        self.plain.append(f"{r.status_code} {path}: {r.text[:100]}")
                time.sleep(0.2)


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="soak-"))
        os.environ["ARENA_LOG_RUN"] = "soak"  # one log folder for every process
        self.pg = PostgresCluster().start()
        self.db_url = self.pg.new_database("soak")
        self.purple = Watched("purple", start_purple(self.tmp))
        self.greens = {
            name: Watched(name, self._green(name), share=2) for name in ("soak-a", "soak-b")
        }
        self.faults: list[str] = []
        self.windows: list[tuple[float, float]] = []
        """Each fault's time, from its start to :data:`AFTER_FAULT_S` after its end."""

    def _green(self, name: str) -> ServiceProcess:
        env = {"GREEN_LEASE_S": str(self.args.lease_s), "GREEN_QUEUE_POLL_S": "0.5"}
        return start_green(
            self.tmp, self.db_url, name, self.purple.service.url, self.args.slots, **env
        )

    @property
    def urls(self) -> list[str]:
        return [g.service.url for g in self.greens.values()]

    def all_tasks(self) -> dict[str, dict]:
        for url in self.urls:
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                return tasks(url)
        return {}

    def counts(self) -> dict[str, int] | None:
        """Tasks per status (None while no replica answers: a fault)."""
        for url in self.urls:
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                return counts(url)
        return None

    def ended(self) -> int:
        now = self.counts() or {}
        return sum(now.get(s, 0) for s in TERMINAL)

    # ---- the faults ----------------------------------------------------------------------

    def fault(self, kind: str) -> None:
        t0 = time.monotonic()
        if kind == "kill":
            b = self.greens["soak-b"]
            b.service.kill()
            time.sleep(2)
            b.service.start(120)  # same port, same name: the tasks it held end at start
            self.greens["soak-b"] = Watched("soak-b", b.service, self.ended(), share=2)
        elif kind == "stop":
            a = self.greens["soak-a"].service
            assert a.proc is not None
            os.kill(a.proc.pid, signal.SIGSTOP)
            time.sleep(self.args.lease_s + 5)
            os.kill(a.proc.pid, signal.SIGCONT)
        elif kind == "purple":
            self.purple.service.kill()
            time.sleep(2)
            self.purple.service.start(120)
            self.purple = Watched("purple", self.purple.service, self.ended())
        elif kind == "db":
            self.pg.stop_server("fast")
            time.sleep(self.args.outage_s)
            self.pg.start_server()
        self.windows.append((t0, time.monotonic() + AFTER_FAULT_S))
        self.faults.append(f"{kind} at {self.ended()} ended ({time.monotonic() - t0:.0f} s)")
        print(f"fault: {self.faults[-1]}", flush=True)

    def holds_now(self) -> dict[str, ProcStats]:
        return {w.name: holds(w.service) for w in [*self.greens.values(), self.purple]}

    def print_holds(self, ended: int, when: str = "") -> None:
        """Each process's figures now: the series shows growth from a step (a fault's backlog
        kept by the allocator) apart from a leak (a rise with the tasks)."""
        now = ", ".join(f"{name} {stats}" for name, stats in self.holds_now().items())
        print(f"{ended} ended{' ' + when if when else ''}: {now}", flush=True)

    # ---- the run ---------------------------------------------------------------------------

    def plan(self) -> list[tuple[float, str]]:
        """When each fault strikes, as a share of the tasks ended."""
        chosen = FAULTS if self.args.faults == "all" else tuple(self.args.faults.split(","))
        steps = [k for k in ("kill", "db", "stop", "purple", "db") if k in chosen]
        return [((i + 1) / (len(steps) + 1), k) for i, k in enumerate(steps)]

    def run(self) -> dict:
        args = self.args
        feeder = Feeder(self.urls, args.tasks, ahead=max(64, 4 * args.slots))
        prober = Prober(self.urls, feeder)
        freeze_client_heap()  # the timed POSTs never wait for a full pass over it (bench/stack.py)
        feeder.start()
        prober.start()
        plan = self.plan() if args.faults else []
        marks = [args.tasks * k // 10 for k in range(1, 11)]
        t0 = time.monotonic()
        while True:
            now = self.counts()
            if now is None:
                time.sleep(2)
                continue
            ended = sum(now[s] for s in TERMINAL)
            feeder.unfinished = sum(now.values()) - ended
            for w in [self.purple, *self.greens.values()]:
                if w.first is None and w.served(ended) >= BASELINE_AFTER:
                    w.first = holds(w.service)
            if marks and ended >= marks[0]:
                self.print_holds(ended)
                while marks and ended >= marks[0]:
                    marks.pop(0)
            if plan and ended >= plan[0][0] * args.tasks:
                self.fault(plan.pop(0)[1])
                self.print_holds(self.ended(), "after the fault")
                continue
            if len(feeder.ids) >= args.tasks and ended >= args.tasks:
                break
            if time.monotonic() - t0 > args.timeout:
                print("timed out", flush=True)
                break
            time.sleep(2)
        took = time.monotonic() - t0
        feeder.stop.set()
        time.sleep(5)  # the last ends are written, the last containers removed
        prober.stop.set()
        prober.join(30)
        return {"took": took, "feeder": feeder, "prober": prober}

    def full_batch(self) -> dict[str, int]:
        """Every slot is back: a batch of twice the slots, kept running, runs on both at once."""
        sleeping = start_sleeping_purple(self.tmp)
        try:
            batch = [
                httpx.post(
                    f"{self.urls[i % 2]}/tasks",
                    headers=AUTH,
                    json={"task": f"arvo:{IDS[i % len(IDS)]}", "purple_url": sleeping.url},
                    timeout=60,
                ).json()["id"]
                for i in range(2 * self.args.slots)
            ]

            def on_both() -> collections.Counter[str] | None:
                now = self.held(set(batch))
                on = collections.Counter(
                    t["instance"] for t in now.values() if t["status"] == "running"
                )
                full = all(on[name] == self.args.slots for name in self.greens)
                return on if full else None

            on = wait_for(on_both, 600, 1.0) or collections.Counter()
            for task_id in batch:
                with contextlib.suppress(httpx.HTTPError):
                    httpx.post(f"{self.urls[0]}/tasks/{task_id}/cancel", headers=AUTH, timeout=60)
            wait_for(lambda: not self.held(set(batch)), 300)
            return dict(on)
        finally:
            sleeping.stop()

    def held(self, ids: set[str]) -> dict[str, dict]:
        """Those of ``ids`` that are being prepared, run or judged: asked by status, so the
        watching reads a few tasks, not every task of the run (a listing of thousands would be
        the bench's load on the replica it measures, and its memory in the figures)."""
        out: dict[str, dict] = {}
        for status in HELD:
            page = httpx.get(
                f"{self.urls[0]}/tasks",
                headers=AUTH,
                params={"status": status, "limit": 500},
                timeout=60,
            ).json()
            out.update({t["id"]: t for t in page["items"] if t["id"] in ids})
        return out

    def claimed_twice(self) -> tuple[int, int]:
        """(claims, tasks claimed more than once), from every replica's log."""
        claims: collections.Counter[str] = collections.Counter()
        pattern = re.compile(r"event=task\.claimed .*?task_id=([0-9a-f-]+)")
        for path in (self.tmp / "logs").rglob("*.log"):
            for match in pattern.finditer(path.read_text(errors="replace")):
                claims[match.group(1)] += 1
        return sum(claims.values()), sum(1 for n in claims.values() if n > 1)

    def close(self) -> None:
        for w in [*self.greens.values(), self.purple]:
            w.service.stop()
        self.pg.stop()


def report(
    soak: Soak,
    result: dict,
    batch: dict[str, int],
    ends: dict[str, dict],
    at_end: dict[str, ProcStats],
) -> bool:
    args, feeder, prober = soak.args, result["feeder"], result["prober"]
    mine = {i: ends[i] for i in feeder.ids if i in ends}
    unended = [i for i, t in mine.items() if t["status"] not in TERMINAL]
    how = collections.Counter(
        (t["status"], t["failure_kind"], t["end_reason"]) for t in mine.values()
    )
    agent = collections.Counter(
        t["end_reason"] for t in mine.values() if t["failure_kind"] == "agent"
    )
    killed = any(f.startswith("purple") for f in soak.faults)
    # the agent's own process died: the tasks it held (purple_lost) and those sent to it while it
    # was down (purple_unreachable) are its failures by the rule, caused by the soak
    purple_died = agent["purple_lost"] + agent["purple_unreachable"] if killed else 0
    other_agent = sum(agent.values()) - purple_died
    left = containers(*soak.greens)
    held = sum(t["status"] in HELD for t in ends.values())
    claims, twice = soak.claimed_twice()
    print(f"\nload average at the end: {os.getloadavg()}")
    print(f"faults: {soak.faults or 'none'}")
    print(
        f"tasks: {len(mine)} posted, {len(mine) - len(unended)} ended, {len(unended)} unended ({result['took']:.0f} s)"
    )
    print("ends:", {" / ".join(str(x) for x in k): n for k, n in sorted(how.items(), key=str)})
    print(
        f"charged to the agent: {sum(agent.values())} {dict(agent)} ({purple_died} lost with the "
        f"purple the soak killed: the agent's own failure by the rule); any other: {other_agent}"
    )
    print(f"charged to infra: {sum(t['failure_kind'] == 'infra' for t in mine.values())}")
    print(
        f"containers left: {len(left)}; tasks still held: {held}; full batch on both replicas at once: {batch}"
    )
    print(f"claims: {claims}; tasks claimed twice: {twice}")
    # every task green holds is one the feeder was answered for, or one of the full batch's
    made_twice = len(ends) - len(set(feeder.ids)) - 2 * args.slots
    print(f"tasks made by a post that was sent again (a refusal, a lost answer): {made_twice}")
    under: list[float] = []
    away: list[float] = []
    for sent, seconds in feeder.timed:
        (under if any(a <= sent <= b for a, b in soak.windows) else away).append(seconds)
    print(
        f"POST /tasks: {len(feeder.timed)} accepted, {percentiles([s for _, s in feeder.timed])}; "
        f"away from faults: {len(away)}, {percentiles(away)}; under a fault (or within "
        f"{AFTER_FAULT_S:g} s of its end): {len(under)}, {percentiles(under)}; "
        f"refused: {dict(feeder.refused)}"
    )
    print(
        f"prober answers: {dict(prober.counts)}; 5xx not in JSON: {len(prober.plain)} {prober.plain[:3]}"
    )
    steady = True
    for w in [*soak.greens.values(), soak.purple]:
        end = at_end[w.name]
        first = w.first
        if first is None:
            print(f"{w.name}: served fewer than {BASELINE_AFTER} tasks since its start; now {end}")
            continue
        grew = {
            "open files": end.fds / first.fds,
            "threads": end.threads / first.threads,
            "RSS": end.rss_mb / first.rss_mb,
        }
        ok = all(g <= 1.10 for g in grew.values())
        steady &= ok
        ratios = ", ".join(f"{k} x{v:.2f}" for k, v in grew.items())
        print(f"{w.name}: after {BASELINE_AFTER} tasks {first}; at the end {end} ({ratios})")
    ok = (
        not unended
        and other_agent == 0
        and not left
        and held == 0
        and all(batch.get(n) == args.slots for n in soak.greens)
        and twice == 0
        and made_twice == 0
        and not prober.plain
        and steady
    )
    print("PASS" if ok else "FAIL")
    return ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=2000)
    p.add_argument(
        "--faults",
        nargs="?",
        const="all",
        default=None,
        help=f"inject faults: all (no value) or some of {','.join(FAULTS)}",
    )
    p.add_argument("--slots", type=int, default=8, help="each replica's slots")
    p.add_argument("--lease-s", type=float, default=10.0)
    p.add_argument("--outage-s", type=float, default=6.0)
    p.add_argument("--timeout", type=float, default=6 * 3600)
    args = p.parse_args()
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    soak = Soak(args)
    try:
        result = soak.run()
        batch = soak.full_batch()
        at_end = soak.holds_now()  # before the report's own listing of every task
        ends = soak.all_tasks()
        ok = report(soak, result, batch, ends, at_end)
    finally:
        soak.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
