"""Benchmark: what a live dashboard viewer adds to a command's round trip.

One task container, one purple policy that sends trivial ``execute: true`` commands through
green's A2A endpoint (the real service path), in alternating blocks: without a viewer, then
with a viewer attached to the task's server-sent event stream (``curl -N`` in its own process,
as a browser would be), and so on, so both sides see the same machine noise. Prints the median
round trip of each side and their ratio (goal: the stream adds < 5 %, ratio < 1.05), and checks
that the viewer really received every command of its blocks.

    uv run python bench/bench_ui_stream.py [--blocks 40] [--per-block 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fixtures.catalog import DEFAULT_ASSETS_DIR, IMAGE_TEMPLATE
from services.green.app import create_app as create_green
from services.green.config import GreenSettings
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from services.purple.protocols import RunResult, TaskContext
from services.shared.logging import router
from tests.support.servers import free_port, serve

TOKEN = "bench-token"


class Viewer:
    """``curl -N`` on the task's event stream, writing what it receives to a file."""

    def __init__(self, green_url: str, task_id: str, after: int, out: Path) -> None:
        self.out = out
        self.proc = subprocess.Popen(
            ["curl", "-sN", "-H", f"authorization: Bearer {TOKEN}",
             f"{green_url}/ui/tasks/{task_id}/stream?after={after}", "-o", str(out)],
        )  # fmt: skip

    async def connected(self) -> None:
        for _ in range(500):
            if self.out.exists() and "retry:" in self.out.read_text():
                return
            await asyncio.sleep(0.01)
        raise RuntimeError("the viewer did not connect")

    def close(self) -> int:
        """Stop; return how many command events arrived."""
        self.proc.terminate()
        self.proc.wait()
        return self.out.read_text().count("event: command")


class BenchPolicy:
    name = "bench"

    def __init__(self, green_url: str, blocks: int, per_block: int, tmp: Path) -> None:
        self.green_url, self.blocks, self.per_block, self.tmp = green_url, blocks, per_block, tmp
        self.times: dict[bool, list[float]] = {False: [], True: []}
        self.delivered = 0
        self.expected = 0

    async def run(self, task: TaskContext) -> RunResult:
        seq = 0
        for _ in range(5):  # warm-up
            await task.env.execute("true")
            seq += 1
        for block in range(self.blocks):
            watched = block % 2 == 1
            viewer = None
            if watched:
                out = self.tmp / f"viewer-{block}.txt"
                viewer = Viewer(self.green_url, task.task_id, seq, out)
                await viewer.connected()
            for _ in range(self.per_block):
                t0 = time.perf_counter()
                await task.env.execute("true")
                self.times[watched].append(time.perf_counter() - t0)
                seq += 1
            if viewer is not None:
                await asyncio.sleep(0.2)  # let the last events arrive
                self.delivered += viewer.close()
                self.expected += self.per_block
        return RunResult(task_id=task.task_id, policy=self.name, status="limits", reason="done")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--blocks", type=int, default=40, help="alternating blocks (even: unwatched)")
    ap.add_argument("--per-block", type=int, default=10, help="commands per block")
    ap.add_argument("--arvo-id", default="900001")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-ui-stream-"))
    os.environ["ARENA_LOG_RUN"] = "log_bench"
    purple_port, green_port = free_port(), free_port()
    green_url = f"http://127.0.0.1:{green_port}"
    policy = BenchPolicy(green_url, args.blocks, args.per_block, tmp)
    purple = create_purple(
        PurpleSettings(port=purple_port, log_dir=tmp / "logs", trajectory_dir=tmp / "traj"),
        make_policy=lambda kind="rca_task": policy,
    )
    green = create_green(
        GreenSettings(
            port=green_port,
            asset_source=str(DEFAULT_ASSETS_DIR),
            asset_cache_dir=tmp / "cache",
            image_template=IMAGE_TEMPLATE,
            database_url=f"sqlite:///{tmp}/g.db",
            log_dir=tmp / "logs",
            purple_url=f"http://127.0.0.1:{purple_port}",
            idle_timeout_s=10,
            purple_poll_s=0.2,
            max_steps=args.blocks * args.per_block + 20,
            api_token=TOKEN,
            instance_name=f"bench-ui-stream-{green_port}",
        )
    )
    auth = {"authorization": f"Bearer {TOKEN}"}
    with serve(purple, purple_port), serve(green, green_port) as g:
        if router():
            router().echo = None
        task = httpx.post(
            f"{g.url}/tasks", json={"task": f"arvo:{args.arvo_id}"}, headers=auth, timeout=60
        ).json()
        while httpx.get(f"{g.url}/tasks/{task['id']}", headers=auth).json()["status"] not in (
            "completed",
            "failed",
        ):
            time.sleep(0.2)
    plain, watched = policy.times[False], policy.times[True]
    p, w = statistics.median(plain) * 1000, statistics.median(watched) * 1000
    print(f"command round trip through green (A2A execute), {len(plain)} + {len(watched)} commands")
    print(f"{'side':<36}{'median ms':>10}{'mean ms':>10}")
    print(f"{'no viewer':<36}{p:>10.2f}{statistics.mean(plain) * 1000:>10.2f}")
    print(f"{'one SSE viewer on the task':<36}{w:>10.2f}{statistics.mean(watched) * 1000:>10.2f}")
    print(f"viewer received {policy.delivered}/{policy.expected} command events")
    print(f"ratio watched/unwatched = {w / p:.3f}   (goal < 1.05)")


if __name__ == "__main__":
    main()
