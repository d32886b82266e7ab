"""A hostile purple that attacks green's HTTP plane with its own task token (issue 20, attacks
4-11), and the tools to watch green while it does: green as its own process, its RSS, latency.

The purple is the real purple service; only its policy (and, for the trajectory attack, the
answer of its trajectory endpoint) is hostile. The policy holds what a third-party agent holds:
the task message, its token, green's URL.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from services.purple.protocols import RunResult, RunStats, TaskContext
from services.purple.signals import TaskEnded
from tests.integration.helpers import text_message
from tests.support.scripted_purple import write_file_command

VALID = {"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}
MIB = 1024 * 1024


def execute_rpc(task_id: str, command: str, token: str | None) -> dict[str, Any]:
    """An ``execute`` as a text-only agent sends it (the token in the message's metadata)."""
    meta = {"token": token} if token else {}
    msg = text_message(f"execute: {command}", contextId=task_id, metadata=meta)
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": "message/send",
            "params": {"message": msg}}  # fmt: skip


def submit_rpc(task_id: str, token: str, **stats: Any) -> dict[str, Any]:
    data = {"kind": "submit", "token": token, **stats}
    msg = text_message("submit", contextId=task_id)
    msg["parts"].append({"kind": "data", "data": data})
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": "message/send",
            "params": {"message": msg}}  # fmt: skip


def reply_text(r: httpx.Response | BaseException) -> str:
    """What an agent-plane answer says (its text parts), or what went wrong sending it."""
    if isinstance(r, BaseException):
        return f"{type(r).__name__}: {r}"
    try:
        body = r.json()
    except ValueError:
        return f"HTTP {r.status_code}: {r.text[:200]}"
    if "error" in body:
        return f"HTTP {r.status_code} error {body['error']}"
    parts = body.get("result", {}).get("parts", [])
    return " ".join(p.get("text", "") for p in parts if isinstance(p, dict))


@dataclass
class Flood:
    """What the flooding agent did and heard."""

    size: int = 70
    command: str = "sleep 5"
    started: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    go: threading.Event = field(default_factory=threading.Event)
    """Set by the test when it watches: the agent floods. Unless ``wait_for_go``, it does not wait."""
    wait_for_go: bool = False
    release: threading.Event = field(default_factory=threading.Event)
    """Set by the test: the agent may submit and end its task."""
    task_id: str = ""
    token: str = ""
    answers: list[str] = field(default_factory=list)
    bad_submit: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    """Counters the agent reports with its bad submission (e.g. a negative cost)."""


class FloodPolicy:
    """Sends ``size`` concurrent executes of one command on its own task, each on its own
    connection, then (once released) a submission with the counters in ``stats`` and a proper one."""

    name = "hostile-flood"

    def __init__(self, green_url: str, flood: Flood) -> None:
        self.green = green_url.rstrip("/")
        self.flood = flood

    async def run(self, task: TaskContext) -> RunResult:
        f = self.flood
        f.task_id, f.token = task.task_id, task.env.token or ""  # type: ignore[attr-defined]
        try:
            await task.env.execute(write_file_command(task.paths.submission, json.dumps(VALID)))
            limits = httpx.Limits(max_connections=f.size, max_keepalive_connections=f.size)
            async with httpx.AsyncClient(base_url=self.green, timeout=60, limits=limits) as http:
                f.started.set()
                while f.wait_for_go and not f.go.is_set():
                    await asyncio.sleep(0.05)
                body = execute_rpc(f.task_id, f.command, f.token)
                sent = [http.post("/", json=body) for _ in range(f.size)]
                answers = await asyncio.gather(*sent, return_exceptions=True)
                f.answers = [reply_text(a) for a in answers]
                f.done.set()
                while not f.release.is_set():
                    await asyncio.sleep(0.1)
                if f.stats:
                    r = await http.post("/", json=submit_rpc(f.task_id, f.token, **f.stats))
                    f.bad_submit = reply_text(r)
            await task.env.submit(RunStats())
        except TaskEnded as exc:
            f.done.set()
            return RunResult(
                task_id=task.task_id, policy=self.name, status="limits", reason=str(exc)
            )
        return RunResult(task_id=task.task_id, policy=self.name, status="submitted", reason="done")


class HostileTrajectory:
    """Wraps purple's ASGI app: its trajectory endpoint answers ``mib`` MiB of JSON, 1 MiB at a
    time, or (``drip``) a byte a second that never ends."""

    def __init__(self, app: Any, mib: int = 600) -> None:
        self.app, self.state, self.mib = app, app.state, mib
        self.drip = False
        self.sent = 0

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/trajectory"):
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        chunk = b'{"steps": [' + b" " * (MIB - 11)
        try:
            if self.drip:
                await self._drip(receive, send)
                return
            for _ in range(self.mib):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                self.sent += len(chunk)
                chunk = b" " * MIB
            await send({"type": "http.response.body", "body": b"]}"})
        except OSError:
            return

    @staticmethod
    async def _drip(receive, send) -> None:
        """A byte a second until the client hangs up (uvicorn drops a send to a closed
        connection silently: without watching for the disconnect, the drip would outlive its
        client and hold the server's shutdown until its thread is given up on)."""

        async def hang_up() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass  # the (empty) request body

        gone = asyncio.ensure_future(hang_up())
        try:
            while not gone.done():
                await send({"type": "http.response.body", "body": b" ", "more_body": True})
                await asyncio.wait({gone}, timeout=1)
        finally:
            gone.cancel()


def rss_mib(pid: int) -> float:
    """A process's resident set size now, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


class PeakRss:
    """Samples a process's RSS every 20 ms in a thread; ``peak`` is the largest seen."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.base = rss_mib(pid)
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mib(self.pid))
            time.sleep(0.02)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mib(self.pid))

    @property
    def growth(self) -> float:
        return self.peak - self.base


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else float("nan")


PROBE = r"""
import json, sys, threading, time
import httpx
from tests.support import web
url, auth = sys.argv[1], sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
latencies, failures = [], []
print("ready", flush=True)
while not stop.is_set():
    t0 = time.monotonic()
    try:
        r = web.get(url, headers={"Authorization": auth} if auth else {}, timeout=10)
        if r.status_code == 200:
            latencies.append(time.monotonic() - t0)
        else:
            failures.append(f"HTTP {r.status_code}")
    except httpx.HTTPError as exc:
        failures.append(type(exc).__name__)
    time.sleep(0.05)
print(json.dumps({"latencies": latencies, "failures": failures}))
"""


class Prober:
    """Calls ``url`` every 50 ms from a process of its own (so the test's threads, the flooding
    purple among them, do not slow the measurement), a fresh connection each time, like a health
    checker; keeps each call's latency, or the error that ended it."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url, self.auth = url, (headers or {}).get("Authorization", "")
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Prober:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", PROBE, self.url, self.auth],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None and self._proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        out, _ = self._proc.communicate(input="", timeout=60)
        result = json.loads(out.strip().splitlines()[-1])
        self.latencies, self.failures = result["latencies"], result["failures"]

    def summary(self) -> str:
        n = len(self.latencies) + len(self.failures)
        return (
            f"{self.url}: {len(self.latencies)}/{n} answered, p95 {p95(self.latencies) * 1000:.0f} ms"
            f", failures {sorted(set(self.failures))}"
        )
