"""Per-step overhead of purple's agent loop vs the round trip of one command.

The overhead is everything but the LLM and the command: prompt and message building, parsing,
argument validation, tool dispatch, observation truncation, compaction checks (and compactions
when the budget is reached) and trajectory writing. To isolate it, the LLM is an in-process
scripted stub and the environment answers instantly with a fixed output. Next to it, the round
trip of a trivial command through ``LocalShellEnvironment`` (a bash subprocess per command) is
measured as the baseline; the ratio says how much the loop adds to the cheapest real step.

    .venv/bin/python bench/bench_agent_loop.py [--steps 400] [--commands 200] [--output-bytes 2000]

(The round trip through real green, A2A and the task container's shell session, is measured
by bench/bench_green_exec.py.)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import ReactAgent
from services.purple.agent.parser import format_text_call
from services.purple.llm.base import LLMReply, ToolCall
from services.purple.llm.scripted import ScriptedLLM
from services.purple.protocols import RunStats, TaskContext, TaskEnvironment
from services.shared.commands import CommandResult
from services.shared.protocol import SubmitResult, TaskPaths
from tests.support.local_env import LocalShellEnvironment, make_workspace


class InstantEnvironment:
    """Answers every command at once with the same output."""

    def __init__(self, output: str) -> None:
        self.output = output
        self.commands = 0

    async def execute(self, command: str, timeout: float | None = None) -> CommandResult:
        self.commands += 1
        return CommandResult(exit_code=0, output=self.output)

    async def submit(self, stats: RunStats | None = None) -> SubmitResult:
        return SubmitResult(accepted=True)


def _reply(mode: str, i: int) -> LLMReply:
    command = f"grep -rn 'needle_{i}' src-vul --include=*.c | head -50"
    thought = "The crash is a heap-buffer-overflow in the parser; let me look at the caller."
    if mode == "text":
        return LLMReply(
            content=format_text_call("run_bash_cmd", {"command": command}, thought),
            tokens_in=1000,
            tokens_out=60,
        )
    return LLMReply(
        content=thought,
        tool_calls=[
            ToolCall(
                id=f"call_{i}", name="run_bash_cmd", arguments=json.dumps({"command": command})
            )
        ],
        tokens_in=1000,
        tokens_out=60,
    )


async def measure_loop_overhead(
    steps: int, mode: str, output_bytes: int, trajectory: bool
) -> dict[str, float]:
    counter = iter(range(10**9))
    llm = ScriptedLLM(default=lambda messages: _reply(mode, next(counter)))
    env = InstantEnvironment(("x" * 79 + "\n") * (output_bytes // 80))
    with tempfile.TemporaryDirectory() as tmp:
        config = AgentConfig(mode=mode, step_limit=steps, cost_limit=0, wall_time_limit_s=0)
        agent = ReactAgent(llm, config, trajectory_dir=Path(tmp) if trajectory else None)
        task = TaskContext(
            task_id="bench", description="Find the root cause.", env=env, paths=TaskPaths()
        )
        start = time.perf_counter()
        result = await agent.run(task)
        elapsed = time.perf_counter() - start
        traj_bytes = sum(p.stat().st_size for p in Path(tmp).iterdir()) if trajectory else 0
    assert result.stats.steps == steps, result.reason
    return {"per_step_s": elapsed / steps, "traj_bytes": traj_bytes}


async def measure_roundtrip(env: TaskEnvironment, n: int, command: str = "true") -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        await env.execute(command)
        times.append(time.perf_counter() - start)
    return times


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--commands", type=int, default=200)
    ap.add_argument(
        "--output-bytes", type=int, default=2000, help="output of each (instant) command"
    )
    args = ap.parse_args()

    import structlog  # keep the loop's per-run log lines out of the timing output

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))

    rows = []
    for mode in ("tool_calls", "text"):
        for trajectory in (True, False):
            r = await measure_loop_overhead(args.steps, mode, args.output_bytes, trajectory)
            rows.append((mode, trajectory, r))

    with tempfile.TemporaryDirectory() as tmp:
        env = LocalShellEnvironment(make_workspace(Path(tmp)))
        await measure_roundtrip(env, 5)  # warm up
        rt = await measure_roundtrip(env, args.commands)
    rt_median = statistics.median(rt)

    print(
        f"agent loop overhead per step ({args.steps} steps, {args.output_bytes} B output per "
        f"command, compaction at the default 96k-token budget)"
    )
    print(f"{'mode':<11} {'trajectory':<11} {'overhead/step':>14} {'vs command RTT':>15}")
    for mode, trajectory, r in rows:
        ms = r["per_step_s"] * 1000
        print(
            f"{mode:<11} {('on' if trajectory else 'off'):<11} {ms:>11.3f} ms "
            f"{r['per_step_s'] / rt_median:>14.2f}x"
        )
    print(
        f"\nbaseline: trivial command round trip via LocalShellEnvironment (bash subprocess), "
        f"{args.commands} runs"
    )
    print(
        f"  median {rt_median * 1000:.3f} ms   p90 "
        f"{statistics.quantiles(rt, n=10)[-1] * 1000:.3f} ms   min {min(rt) * 1000:.3f} ms"
    )
    print("(through green and a task container: bench/bench_green_exec.py; figures in README.md)")


if __name__ == "__main__":
    asyncio.run(main())
