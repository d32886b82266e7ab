"""Benchmark: the dashboard's task list with 2,000 tasks in the database (server time, paged).

Seeds 2,000 tasks (realistic rows: scores with explanations, ground truth, 7 fixture ids, a
few assessments) into a real SQLite database through green's store, serves green with uvicorn
and times each request inside the server (an ASGI wrapper around the app: from the request's
arrival to the last byte of the response). Prints the median and p90 per view; goal: the
median of every view < 300 ms. The REST API's ``GET /tasks?limit=50`` is printed as the
baseline measured in the same run.

    uv run python bench/bench_ui_tasks.py [--tasks 2000] [--n 50]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.catalog import DEFAULT_ASSETS_DIR, IMAGE_TEMPLATE
from services.green.app import create_app as create_green
from services.green.config import GreenSettings
from services.green.kinds.arvo.scoring.metrics import LocationResult, TaskScore
from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.models import Command, FailureKind, Task, TaskStatus, utcnow
from tests.support.servers import free_port, serve

TOKEN = "bench-token"
IDS = [str(i) for i in range(900001, 900008)]
STATUSES = [TaskStatus.completed] * 6 + [TaskStatus.failed] * 2 + [TaskStatus.running]


class ServerTimer:
    """ASGI wrapper: the time each request spends in the server, by path and query."""

    def __init__(self, app) -> None:
        self.app = app
        self.times: dict[str, list[float]] = defaultdict(list)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        await self.app(scope, receive, send)
        key = scope["path"] + (
            "?" + scope["query_string"].decode() if scope["query_string"] else ""
        )
        self.times[key].append(time.perf_counter() - t0)


def fake_scores(i: int) -> dict:
    hit = float(i % 3 == 0)
    return TaskScore(
        file_at_1=hit, file_at_5=1.0, func_at_1=hit, func_at_5=hit, line_at_5=hit, iou=0.4 * hit,
        submitted=True, n_locations=5,
        locations=[LocationResult(rank=r, file=f"src/file{r}.c", normalized=f"src/file{r}.c",
                                  line_start=10, line_end=20) for r in range(1, 6)],
        explanation=[f"rank {r} src/file{r}.c:10-20: file ✗ — not a changed file"
                     for r in range(1, 6)],
    ).to_dict()  # fmt: skip


def seed(url: str, n: int) -> None:
    store = TaskStore(make_engine(url))
    start = utcnow() - timedelta(days=3)
    runs = [str(uuid.uuid4()) for _ in range(8)]
    gt = {
        "files": [{"path": "src/x.c", "lines": list(range(40, 60)), "regions": [], "functions": []}]
    }
    for i in range(n):
        status, task_id = STATUSES[i % len(STATUSES)], str(uuid.uuid4())
        store.add(
            Task(
                id=task_id,
                ref_id=IDS[i % len(IDS)],
                purple_url="http://purple:9019",
                max_steps=40,
                task_timeout_s=1800,
                command_timeout_s=120,
                status=status,
                created_at=start + timedelta(seconds=60 * i),
                started_at=start + timedelta(seconds=60 * i + 2),
                finished_at=start + timedelta(seconds=60 * i + 50) if status.terminal else None,
                steps=12,
                cost=0.02,
                scores=fake_scores(i) if status.terminal else None,
                ground_truth=gt,
                failure_kind=FailureKind.agent if status is TaskStatus.failed else None,
                end_reason="submitted" if status is TaskStatus.completed else None,
                assessment_id=runs[i % len(runs)] if i % 2 else None,
                owner="someone-else",
            )
        )
        if i % 100 == 0:
            for seq in range(1, 13):
                store.add_command(
                    Command(task_id=task_id, seq=seq, command="ls",
                            exit_code=0, duration_s=0.01, output="x" * 2000)
                )  # fmt: skip


def ms(values: list[float], q: float = 0.5) -> float:
    return statistics.quantiles(values, n=100)[int(q * 100) - 1] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--n", type=int, default=50, help="requests per view")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-ui-"))
    os.environ["ARENA_LOG_RUN"] = "log_bench"
    url = f"sqlite:///{tmp}/g.db"
    t0 = time.perf_counter()
    seed(url, args.tasks)
    seeded = time.perf_counter() - t0
    port = free_port()
    app = create_green(
        GreenSettings(
            port=port,
            asset_source=str(DEFAULT_ASSETS_DIR),
            asset_cache_dir=tmp / "cache",
            image_template=IMAGE_TEMPLATE,
            database_url=url,
            log_dir=tmp / "logs",
            api_token=TOKEN,
            instance_name=f"bench-ui-{port}",
        )
    )
    timer = ServerTimer(app)
    views = [
        "/tasks?limit=50",  # the REST API: the baseline
        "/ui/tasks",
        "/ui/tasks?page=20",
        "/ui/tasks?status=completed",
        "/ui/tasks?bug_class=heap-buffer-overflow",
        "/ui/tasks?status=failed&kind=arvo&page=3",
        "/ui/tasks?status=completed&fragment=rows",
        "/ui",  # the runs page (not a goal of this benchmark: printed for information)
    ]
    with (
        serve(timer, port) as srv,
        httpx.Client(
            base_url=srv.url, headers={"authorization": f"Bearer {TOKEN}"}, timeout=60
        ) as c,
    ):
        total = c.get("/tasks?limit=1").json()["total"]
        for _ in range(3):  # warm-up (bug classes read once per id, then memoized)
            for v in views:
                assert c.get(v).status_code == 200, v
        timer.times.clear()
        for _ in range(args.n):
            for v in views:
                c.get(v)
    print(
        f"task list with {total} tasks in SQLite (seeded in {seeded:.1f} s), {args.n} requests per view"
    )
    print(f"{'view':<48}{'median ms':>10}{'p90 ms':>10}")
    for v in views:
        print(f"{v:<48}{ms(timer.times[v]):>10.2f}{ms(timer.times[v], 0.9):>10.2f}")
    worst = max(statistics.median(timer.times[v]) for v in views[1:-1]) * 1000
    print(f"slowest task list view, median server time: {worst:.1f} ms   (goal < 300)")


if __name__ == "__main__":
    main()
