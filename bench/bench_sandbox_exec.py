"""Benchmark: a trivial command through DockerSandbox.exec vs a ``docker exec`` per command.

In one run, on the same container, interleaved (the order rotates every round, so all methods
share the machine's noise):

  * ``await DockerSandbox.exec("echo hi")``: the persistent shell session over the exec stream
    (timed on the event loop that awaits it),
  * ``docker exec <container> sh -c 'echo hi'`` through the Docker CLI (subprocess): the baseline,
  * docker-py's one-shot ``container.exec_run(["sh", "-c", "echo hi"])``: a second reference.

Prints median and p90 latency of each and the ratio to the CLI (goal for the session: <= 0.8).

    .venv/bin/python bench/bench_sandbox_exec.py [--n 200] [--image arena/arvo-base:bookworm]
"""

from __future__ import annotations

import argparse
import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.sandbox.base import SandboxSpec
from services.sandbox.blocking import BlockingProvider
from services.sandbox.docker import DockerSandboxProvider


def _p90(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=10)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="rounds (each runs every method once)")
    parser.add_argument("--image", default="arena/arvo-base:bookworm")
    args = parser.parse_args()

    provider = BlockingProvider(DockerSandboxProvider(label_prefix="arenabench"))
    spec = SandboxSpec(image=args.image, task_id=secrets.token_hex(8), ref_id="bench")
    sandbox = provider.create(spec)
    try:
        container = provider.client.containers.get(sandbox.name)

        async def in_loop() -> float:
            started = time.perf_counter()
            result = await sandbox.sandbox.exec("echo hi", timeout=10)
            assert result.output == "hi\n", result
            return time.perf_counter() - started

        def session() -> float:
            """Timed on the event loop, as green awaits it (not across the blocking facade)."""
            return provider.loop.call(in_loop())

        def cli() -> None:
            cmd = ["docker", "exec", sandbox.name, "sh", "-c", "echo hi"]
            out = subprocess.run(cmd, capture_output=True, check=True).stdout
            assert out == b"hi\n", out

        def exec_run() -> None:
            code, out = container.exec_run(["sh", "-c", "echo hi"])
            assert (code, out) == (0, b"hi\n"), (code, out)

        methods: dict[str, Callable[[], float | None]] = {
            "DockerSandbox.exec (session)": session,
            "docker exec (CLI)": cli,
            "container.exec_run (docker-py)": exec_run,
        }
        samples: dict[str, list[float]] = {name: [] for name in methods}
        names = list(methods)
        for _ in range(5):  # warm-up
            for name in names:
                methods[name]()
        for round_ in range(args.n):
            shift = round_ % len(names)
            for name in names[shift:] + names[:shift]:
                started = time.perf_counter()
                inside = methods[name]()
                samples[name].append(inside or time.perf_counter() - started)
    finally:
        sandbox.remove()

    cli_median = statistics.median(samples["docker exec (CLI)"])
    print(f"echo hi, {args.n} interleaved rounds, image {args.image}\n")
    print(f"{'method':<32} {'median ms':>10} {'p90 ms':>9} {'/ CLI':>7}")
    for name, values in samples.items():
        median = statistics.median(values)
        print(
            f"{name:<32} {median * 1e3:>10.2f} {_p90(values) * 1e3:>9.2f}"
            f" {median / cli_median:>7.3f}"
        )
    ratio = statistics.median(samples["DockerSandbox.exec (session)"]) / cli_median
    print(f"\nsession / CLI = {ratio:.3f} (goal <= 0.8): {'OK' if ratio <= 0.8 else 'MISSED'}")
    return 0 if ratio <= 0.8 else 1


if __name__ == "__main__":
    raise SystemExit(main())
