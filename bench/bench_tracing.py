"""Benchmark: a command's round trip with tracing off against the same with tracing on.

Two green+purple pairs in this process (as bench_green_exec.py runs one): one with no
OpenTelemetry endpoint (tracing off: the default), one exporting to an OTLP/HTTP receiver in a
process of its own (tracing on: a task span, purple's invoke_agent span, an execute_tool span
per command). Rounds alternate a task on each pair; every task times ``--n`` trivial
``execute`` round trips through green's A2A path, each followed by ``docker exec <container>
true`` through the Docker CLI, the baseline measured in the same run. Prints the medians, the
ratios on/off (the price of tracing) and off/CLI, each round's on/off ratio (so drift between
rounds shows), and what the instrumentation costs per command while off (its helper, timed in
a loop) against the off round trip.

    uv run --frozen python bench/bench_tracing.py [--n 100] [--rounds 4] [--arvo-id 900001]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from contextlib import ExitStack
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_green_exec import BenchPolicy
from bench.green_and_purple import green_and_purple
from services.green.edge.server import server_config
from services.shared import telemetry
from services.shared.logging import router
from tests.support.servers import serve

TOKEN = "bench-operator-token"
RECEIVER = """
import sys
from tests.support.otlp_receiver import OtlpReceiver
with OtlpReceiver() as r:
    print(r.url, flush=True)
    sys.stdin.read()  # until the benchmark closes it
    print(len(r.spans), flush=True)
"""


def _stack(stack: ExitStack, tmp: Path, policy: BenchPolicy, n: int) -> tuple[str, httpx.Client]:
    purple, purple_port, green, green_port = green_and_purple(
        tmp, policy, TOKEN, purple_poll_s=0.2, max_steps=n + 10
    )
    config = server_config(
        green, green.state.orchestrator.settings, host="127.0.0.1", port=green_port, lifespan="on"
    )
    stack.enter_context(serve(purple, purple_port))
    g = stack.enter_context(serve(green, config=config))
    http = stack.enter_context(
        httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
    )
    return g.url, http


def _run_task(url: str, http: httpx.Client, arvo_id: str) -> None:
    task = http.post(f"{url}/tasks", json={"task": f"arvo:{arvo_id}"}).json()
    while http.get(f"{url}/tasks/{task['id']}").json()["status"] not in ("completed", "failed"):
        time.sleep(0.5)


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def _off_helper_us() -> float:
    """Microseconds per command of the instrumentation while off: the span helper entered and
    left, and told the result, as CommandTools.execute does."""

    def one() -> None:
        with telemetry.tool("run_bash_cmd", "call_1", "true") as span:
            span.command(exit_code=0, timed_out=False, truncated=False, output="")

    loops = 100_000
    return min(timeit.repeat(one, number=loops, repeat=5)) / loops * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=100, help="commands per task")
    ap.add_argument("--rounds", type=int, default=4, help="tasks on each pair, alternating")
    ap.add_argument("--arvo-id", default="900001")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-tracing-"))
    os.environ["ARENA_LOG_RUN"] = "log_bench"
    receiver = subprocess.Popen(
        [sys.executable, "-c", RECEIVER],
        cwd=Path(__file__).resolve().parents[1],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert receiver.stdout is not None and receiver.stdin is not None
    endpoint = receiver.stdout.readline().strip()
    off, on = BenchPolicy(args.n), BenchPolicy(args.n)
    with ExitStack() as stack:
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            os.environ.pop(name, None)
        off_url, off_http = _stack(stack, tmp / "off", off, args.n)
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint  # read as the pair is made
        on_url, on_http = _stack(stack, tmp / "on", on, args.n)
        del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"]
        if router():
            router().echo = None  # keep the table readable
        rounds: list[float] = []
        for _ in range(args.rounds):
            seen_off, seen_on = len(off.a2a), len(on.a2a)
            _run_task(off_url, off_http, args.arvo_id)
            _run_task(on_url, on_http, args.arvo_id)
            rounds.append(_median_ms(on.a2a[seen_on:]) / _median_ms(off.a2a[seen_off:]))
    receiver.stdin.close()
    spans = int(receiver.stdout.readline().strip() or 0)
    receiver.wait(timeout=30)

    a_off, a_on = _median_ms(off.a2a), _median_ms(on.a2a)
    cli = _median_ms(off.cli + on.cli)
    helper_us = _off_helper_us()
    print(
        f"command round trip, tracing off vs on: {args.rounds} rounds x {args.n} trivial "
        "commands on each, alternating"
    )
    print(f"{'path':<46}{'median ms':>10}")
    print(f"{'execute via green A2A, tracing off':<46}{a_off:>10.2f}")
    print(f"{'execute via green A2A, tracing on':<46}{a_on:>10.2f}")
    print(f"{'docker exec <container> true (CLI, baseline)':<46}{cli:>10.2f}")
    print(f"ratio on/off = {a_on / a_off:.3f}   per round: {', '.join(f'{r:.3f}' for r in rounds)}")
    print(f"ratio off/CLI = {a_off / cli:.3f}   on/CLI = {a_on / cli:.3f}")
    print(
        f"instrumentation while off: {helper_us:.2f} us per command = "
        f"{helper_us / 1000 / a_off:.5f} of the off round trip"
    )
    expected = args.rounds * (args.n + 3)  # a task span, invoke_agent, hostname and the n
    print(f"spans the receiver got: {spans} (expected {expected})")


if __name__ == "__main__":
    main()
