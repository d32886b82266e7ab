"""Benchmark: green's whole service path for one command, and the time to the first command.

In one run, on the same task container:
  * median round trip of a trivial ``execute`` sent by purple's tools through green's A2A
    endpoint (purple's A2A client -> HTTP -> green's executor -> sandbox session -> container ->
    back -> purple's record of the command), as an agent's command goes,
  * median ``docker exec <container> true`` through the Docker CLI (the baseline),
  interleaved so both see the same machine noise; prints the ratio (goal <= 0.15);
  * median time from ``POST /tasks`` to the first command served, for a cached fixture
    (goal < 2 s).

Green is served as ``python -m services.green`` serves it (``server_config``: its guarded h11
protocol and its limits); both services run in this process.

    uv run python bench/bench_green_exec.py [--n 200] [--tasks 5] [--arvo-id 900001]
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

from bench.green_and_purple import green_and_purple
from services.green.edge.server import server_config
from services.purple.protocols import RunResult, TaskContext
from services.purple.tools.rca import RcaTools
from services.shared.logging import router
from tests.support.servers import serve

BENCH_TOKEN = "bench-operator-token"


class BenchPolicy:
    """Purple's side of the benchmark: time each execute, and a CLI exec next to it."""

    name = "bench"

    def __init__(self, n: int) -> None:
        self.n = n
        self.first_command_at: dict[str, float] = {}
        self.a2a: list[float] = []
        self.in_sandbox: list[float] = []
        self.cli: list[float] = []

    async def run(self, task: TaskContext) -> RunResult:
        tools = RcaTools(task.env, task.paths, commands=task.commands)  # records as a run does
        first = await tools.execute("hostname")
        self.first_command_at[task.task_id] = time.perf_counter()
        container = first.output.strip()
        for _ in range(self.n):
            t0 = time.perf_counter()
            result = await tools.execute("true")
            self.a2a.append(time.perf_counter() - t0)
            self.in_sandbox.append(result.duration_s)
            t0 = time.perf_counter()
            await asyncio.to_thread(
                subprocess.run, ["docker", "exec", container, "true"], check=True
            )
            self.cli.append(time.perf_counter() - t0)
        return RunResult(
            task_id=task.task_id, policy=self.name, status="limits", reason="bench done"
        )


def ms(values: list[float], q: float = 0.5) -> float:
    return (
        statistics.quantiles(values, n=100)[int(q * 100) - 1] * 1000
        if len(values) > 2
        else values[0] * 1000
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=200, help="commands per side")
    ap.add_argument(
        "--tasks", type=int, default=5, help="tasks for the time-to-first-command figure"
    )
    ap.add_argument("--arvo-id", default="900001")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-green-"))
    os.environ["ARENA_LOG_RUN"] = "log_bench"
    policy = BenchPolicy(args.n)
    purple, purple_port, green, green_port = green_and_purple(
        tmp, policy, BENCH_TOKEN, purple_poll_s=0.2, max_steps=args.n + 10
    )
    auth = {"Authorization": f"Bearer {BENCH_TOKEN}"}
    settings = green.state.orchestrator.settings
    as_deployed = server_config(green, settings, host="127.0.0.1", port=green_port, lifespan="on")
    with (
        serve(purple, purple_port),
        serve(green, config=as_deployed) as g,
        httpx.Client(headers=auth, timeout=60) as http,  # one client: no TLS set-up per poll
    ):
        if router():
            router().echo = None  # keep the table readable
        posted: dict[str, float] = {}
        for i in range(args.tasks):
            policy.n = args.n if i == 0 else 0
            t0 = time.perf_counter()
            task = http.post(f"{g.url}/tasks", json={"task": f"arvo:{args.arvo_id}"}).json()
            posted[task["id"]] = t0
            while http.get(f"{g.url}/tasks/{task['id']}").json()["status"] not in (
                "completed",
                "failed",
            ):
                time.sleep(0.5)  # the bench's own watching: not so often that it competes
    first = [policy.first_command_at[t] - posted[t] for t in posted if t in policy.first_command_at]

    a2a, cli = ms(policy.a2a), ms(policy.cli)
    print(
        f"green service path vs docker CLI, {args.n} interleaved trivial commands on one container"
    )
    print(f"{'path':<44}{'median ms':>10}{'p90 ms':>10}")
    print(f"{'execute via green A2A (purple client)':<44}{a2a:>10.2f}{ms(policy.a2a, 0.9):>10.2f}")
    print(f"{'docker exec <container> true (CLI)':<44}{cli:>10.2f}{ms(policy.cli, 0.9):>10.2f}")
    print(
        f"{'  of which inside the sandbox session':<44}{ms(policy.in_sandbox):>10.2f}"
        f"{ms(policy.in_sandbox, 0.9):>10.2f}"
    )
    print(f"ratio green/CLI = {a2a / cli:.3f}   (goal <= 0.15)")
    print(
        f"POST /tasks -> first command served, median of {len(first)} cached tasks: "
        f"{statistics.median(first) * 1000:.0f} ms (min {min(first) * 1000:.0f}, max {max(first) * 1000:.0f}; goal < 2000)"
    )


if __name__ == "__main__":
    main()
