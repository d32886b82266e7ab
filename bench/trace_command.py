"""Trace: which of the project's functions one agent command enters, purple -> container -> purple.

Runs green and purple in this process (as bench/bench_green_exec.py does) with a ReAct-style
policy that sends commands through purple's tools (so purple's recording is on the path), and
records, for one command, every function under ``services/`` entered on any thread (the first
entry of each, in order). Prints them and the count: the "command walk" of issue #23.

    uv run --frozen python bench/trace_command.py [--arvo-id 900001] [--all]

``--all`` also lists the functions entered more than once with their counts. Nothing is timed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.green_and_purple import green_and_purple
from services.purple.protocols import RunResult, TaskContext
from services.purple.tools.rca import RcaTools
from services.shared.logging import router
from tests.support.servers import serve

TOKEN = "trace-operator-token"
ROOT = str(Path(__file__).resolve().parents[1] / "services")
SDK = f"site-packages{os.sep}a2a{os.sep}"


class Tracer:
    """Records the first entry of each project function while :attr:`on` is set."""

    def __init__(self) -> None:
        self.on = False
        self.order: list[str] = []
        self.counts: dict[str, int] = {}
        self.sdk: set[str] = set()
        """The A2A SDK's functions entered (``a2a`` package), for the library's share."""
        self._lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on or event != "call":
            return
        code = frame.f_code
        if SDK in code.co_filename:
            with self._lock:
                self.sdk.add(f"{code.co_filename}:{code.co_qualname}")
            return
        if not code.co_filename.startswith(ROOT) or code.co_name.startswith("<"):
            return
        if "disk-watch" in threading.current_thread().name:  # the disk watch, not the command
            return
        where = code.co_filename[len(ROOT) - len("services") :]
        name = f"{where}:{code.co_qualname}"
        with self._lock:
            if name not in self.counts:
                self.order.append(name)
            self.counts[name] = self.counts.get(name, 0) + 1


class TracedPolicy:
    """Runs two warm-up commands through purple's tools, then one traced command."""

    name = "trace"

    def __init__(self, tracer: Tracer) -> None:
        self.tracer = tracer
        self.done = threading.Event()

    async def run(self, task: TaskContext) -> RunResult:
        tools = RcaTools(task.env, task.paths, commands=task.commands)
        for _ in range(2):
            await tools.run_bash_cmd("true")
        self.tracer.on = True
        await tools.run_bash_cmd("true")
        self.tracer.on = False
        self.done.set()
        return RunResult(task_id=task.task_id, policy=self.name, status="limits", reason="done")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--arvo-id", default="900001")
    ap.add_argument("--all", action="store_true", help="also show repeat counts")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="trace-command-"))
    os.environ["ARENA_LOG_RUN"] = "log_trace"
    tracer = Tracer()
    policy = TracedPolicy(tracer)
    purple, purple_port, green, green_port = green_and_purple(
        tmp,
        policy,
        TOKEN,
        purple_poll_s=30,  # no polling of purple while the command is traced
    )
    threading.setprofile(tracer)
    with serve(purple, purple_port), serve(green, green_port) as g:
        if router():
            router().echo = None
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(headers=auth, timeout=60) as http:
            task = http.post(f"{g.url}/tasks", json={"task": f"arvo:{args.arvo_id}"}).json()
            if not policy.done.wait(120):
                raise SystemExit(f"the traced command did not run: {task}")
            while http.get(f"{g.url}/tasks/{task['id']}").json()["status"] not in (
                "completed",
                "failed",
            ):
                time.sleep(0.2)
    threading.setprofile(None)  # type: ignore[arg-type]
    for i, name in enumerate(tracer.order, 1):
        repeat = f"  x{tracer.counts[name]}" if args.all and tracer.counts[name] > 1 else ""
        print(f"{i:3d}  {name}{repeat}")
    files = {n.split(":")[0] for n in tracer.order}
    print(f"one command entered {len(tracer.order)} functions of services/ in {len(files)} files")
    print(f"  and {len(tracer.sdk)} functions of the A2A SDK (a2a-sdk)")
    for part, prefixes in PARTS.items():
        n = sum(1 for name in tracer.order if name.startswith(prefixes))
        print(f"  {part:<44}{n:>4}")


PARTS = {
    "purple (tools, environment, recording)": ("services/purple/",),
    "HTTP and A2A plumbing (middlewares, parts)": (
        "services/shared/a2a",
        "services/green/edge/http_limits",
        "services/green/ui/headers",
        "services/green/edge/auth",
        "services/green/a2a/gate",
        "services/green/a2a/requests",
        "services/shared/protocol",
    ),
    "green's service (executor, live task, store, log)": (
        "services/green/a2a/executor",
        "services/green/tasks/live_task",
        "services/green/store",
        "services/green/kinds",
        "services/shared/logging",
        "services/shared/task_ref",
        "services/shared/text",
    ),
    "sandbox (session, transport, disk watch)": ("services/sandbox/",),
}


if __name__ == "__main__":
    main()
