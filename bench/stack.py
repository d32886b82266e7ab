"""Real green and purple processes on the bundled fixtures, for the benchmarks that load whole
services (bench_burst.py, soak.py): start them, post tasks all at once, follow them, read what
each process holds and which containers are left.

Purple runs its offline stack-trace analyst (fast, no model); green runs the fixture tasks
(``python -m fixtures.build`` builds them) on this machine's Docker engine. Each service is its
own process, started as ``python -m services.<name>`` starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import httpx

from fixtures.catalog import DEFAULT_ASSETS_DIR, IMAGE_TEMPLATE
from services.purple.app import create_app as create_purple
from services.purple.config import PurpleSettings
from tests.support.proc_stats import ProcStats, proc_stats
from tests.support.scripted_purple import Observed, Script, ScriptedPolicy
from tests.support.servers import ServiceProcess, ThreadedServer, free_port

TOKEN = "bench-operator-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
IDS = ["900001", "900002", "900003", "900004", "900005", "900006", "900007"]
"""The fixture tasks the analyst solves (the broken 9009xx ones are for `arena tasks verify`)."""
TERMINAL = {"completed", "failed", "cancelled"}
HELD = {"preparing", "running", "evaluating"}


def start_purple(tmp: Path, name: str = "purple", slots: int = 512) -> ServiceProcess:
    """Purple with its offline analyst."""
    env = {
        "PURPLE_POLICY": "stacktrace",
        "PURPLE_LOG_DIR": str(tmp / "logs"),
        "PURPLE_TRAJECTORY_DIR": str(tmp / f"traj-{name}"),
        "PURPLE_MAX_CONCURRENT_TASKS": str(slots),
    }
    return ServiceProcess("services.purple", free_port(), env, tmp / f"{name}.out").start(120)


def green_env(tmp: Path, db_url: str, name: str, purple_url: str, slots: int) -> dict[str, str]:
    """A green replica's settings for a load: bounds of intake and connections out of the way."""
    return {
        "GREEN_ASSET_SOURCE": str(DEFAULT_ASSETS_DIR),
        "GREEN_IMAGE_TEMPLATE": IMAGE_TEMPLATE,
        "GREEN_DATABASE_URL": db_url,
        "GREEN_LOG_DIR": str(tmp / "logs"),
        "GREEN_ASSET_CACHE_DIR": str(tmp / "cache"),
        "GREEN_INSTANCE_NAME": name,
        "GREEN_API_TOKEN": TOKEN,
        "GREEN_PURPLE_URL": purple_url,
        "GREEN_PURPLE_ALLOWLIST": '["http://127.0.0.1:*"]',
        "GREEN_PURPLE_POLL_S": "0.5",
        "GREEN_MAX_CONCURRENT_TASKS": str(slots),
        "GREEN_CONTAINER_MEMORY": "512m",
        "GREEN_INTAKE_PER_MINUTE": "100000",
        "GREEN_MAX_QUEUED_TASKS": "100000",
        "GREEN_MAX_CONNECTIONS_PER_CREDENTIAL": "512",
    }


def start_green(
    tmp: Path, db_url: str, name: str, purple_url: str, slots: int, **env: str
) -> ServiceProcess:
    port = free_port()
    settings = {
        **green_env(tmp, db_url, name, purple_url, slots),
        "GREEN_PUBLIC_URL": f"http://127.0.0.1:{port}",
        **env,
    }
    return ServiceProcess("services.green", port, settings, tmp / f"{name}.out").start(120)


def freeze_client_heap() -> None:
    """What this process holds now, collected once and frozen (``gc.freeze``): the collector's
    later full passes never walk it again.

    The benchmarks import green's and purple's stacks for their helpers: about 160,000 objects.
    A full collection walks them all: in the client, while 64 tasks started, such passes took
    107-303 ms (timed with ``gc.callbacks``), each was counted in the four requests under way,
    and made the run's p95. That pause is the client's, not green's answer (the services freeze
    their own start: services/shared/startup.py)."""
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The block's requests timed with this process's cyclic garbage collector off, as
    ``timeit`` times code: the heap is frozen first (:func:`freeze_client_heap`), and the
    collector is on again when the block ends."""
    freeze_client_heap()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def post_at_once(url: str, refs: list[str], **body: Any) -> tuple[list[str], list[float]]:
    """``POST /tasks`` for every ref, all at once, each on a connection of its own; the task ids
    and each request's seconds (from its first byte sent to its answer read).

    A bare HTTP/1.1 client on asyncio's streams: httpx's connection pool scans every connection
    for each request, which at hundreds of requests at once costs the client more CPU than green
    spends answering, and the figure would be the client's."""
    host, port = url.removeprefix("http://").split(":")
    with collector_paused():
        answers = await asyncio.gather(
            *(_post(host, int(port), {"task": f"arvo:{ref}", **body}) for ref in refs)
        )
    return [i for i, _ in answers], [s for _, s in answers]


async def post_steadily(
    url: str, refs: list[str], clients: int = 4, *, fresh: bool = False, **body: Any
) -> tuple[list[str], list[float]]:
    """``POST /tasks`` for every ref, ``clients`` at a time (as ``arena run`` posts: each of its
    workers posts one task, then the next, over one ``httpx.AsyncClient`` whose connections are
    kept alive); the task ids and each request's seconds, the client's own work included.
    ``fresh``: each request on a connection of its own, closed after it (the accept and the
    close then count too)."""
    host, port = url.removeprefix("http://").split(":")
    todo = list(refs)
    ids: list[str] = []
    seconds: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async with httpx.AsyncClient(headers=AUTH, timeout=60, limits=limits) as http:

        async def kept_alive(ref: str) -> tuple[str, float]:
            t0 = time.perf_counter()
            r = await http.post(f"{url}/tasks", json={"task": f"arvo:{ref}", **body})
            took = time.perf_counter() - t0
            if r.status_code != 202:
                raise RuntimeError(f"POST /tasks answered {r.status_code}: {r.text[:300]}")
            return r.json()["id"], took

        async def client() -> None:
            while todo:
                ref = todo.pop()
                if fresh:
                    task_id, s = await _post(host, int(port), {"task": f"arvo:{ref}", **body})
                else:
                    task_id, s = await kept_alive(ref)
                ids.append(task_id)
                seconds.append(s)

        with collector_paused():
            await asyncio.gather(*(client() for _ in range(clients)))
    return ids, seconds


async def bare_request(
    host: str, port: int, method: str, target: str, body: dict[str, Any] | None = None
) -> tuple[bytes, bytes, float]:
    """One request on a connection of its own, written in one piece and closed after the answer
    (a bare HTTP/1.1 client: no pool to scan, no split of headers and body): the status line,
    the answer's body and the seconds from the first byte sent to the answer read."""
    payload = b"" if body is None else json.dumps(body).encode()
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}"]
    lines.append(f"Authorization: {AUTH['Authorization']}")
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(payload)}"]
    head = "\r\n".join([*lines, "Connection: close", "", ""]).encode()
    reader, writer = await asyncio.open_connection(host, port)
    try:
        t0 = time.perf_counter()
        writer.write(head + payload)
        answer = await reader.read()
        seconds = time.perf_counter() - t0
    finally:
        writer.close()
    status, _, rest = answer.partition(b"\r\n")
    return status, rest.partition(b"\r\n\r\n")[2], seconds


async def _post(host: str, port: int, body: dict[str, Any]) -> tuple[str, float]:
    status, answer, seconds = await bare_request(host, port, "POST", "/tasks", body)
    if b" 202 " not in status:
        raise RuntimeError(f"POST /tasks answered {status!r}: {answer[:300]!r}")
    return json.loads(answer)["id"], seconds


def tasks(url: str, ids: set[str] | None = None) -> dict[str, dict]:
    """Every task the replica's database holds (or those of ``ids``), by id."""
    out: dict[str, dict] = {}
    offset = 0
    while True:
        page = httpx.get(
            f"{url}/tasks", headers=AUTH, params={"limit": 500, "offset": offset}, timeout=60
        ).json()
        out.update({t["id"]: t for t in page["items"] if ids is None or t["id"] in ids})
        offset += len(page["items"])
        if not page["items"] or offset >= page["total"]:
            return out


STATUSES = ("queued", "preparing", "running", "evaluating", "completed", "failed", "cancelled")


def counts(url: str) -> dict[str, int]:
    """How many tasks the replica's database holds in each status (one cheap request each: a
    whole listing would load green more than the run it watches)."""
    with httpx.Client(headers=AUTH, timeout=30) as client:
        return {
            s: client.get(f"{url}/tasks", params={"status": s, "limit": 1}).json()["total"]
            for s in STATUSES
        }


def wait_for(what: Callable[[], Any], timeout: float, period: float = 1.0) -> Any:
    """``what()``'s first true answer within ``timeout`` s (None after it); an answer that
    fails (a replica restarting, the database away) is asked again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            if result := what():
                return result
        time.sleep(period)
    return None


def wait_ended(url: str, ids: list[str], timeout: float) -> dict[str, dict]:
    """The tasks once all have ended (or as they are at ``timeout``)."""
    wanted = set(ids)
    wait_for(lambda: all(t["status"] in TERMINAL for t in tasks(url, wanted).values()), timeout)
    return tasks(url, wanted)


def containers(*owners: str) -> list[str]:
    """Task containers of these green replicas still on the engine."""
    client = docker.from_env()
    try:
        return [
            c.name
            for owner in owners
            for c in client.containers.list(
                all=True, filters={"label": ["arena.managed=1", f"arena.owner={owner}"]}
            )
        ]
    finally:
        client.close()


def start_sleeping_purple(tmp: Path, seconds: float = 1800) -> ThreadedServer:
    """A purple (in this process) whose every task runs ``sleep 1`` now and then for about
    ``seconds``: tasks that stay running, for measuring what a running task holds."""
    port = free_port()
    settings = PurpleSettings(
        port=port,
        log_dir=tmp / "logs",
        trajectory_dir=tmp / "traj-sleeping",
        max_concurrent_tasks=1024,
    )
    script = Script(commands=["sleep 1"] * int(seconds / 10), pause_s=9)
    policy = ScriptedPolicy(script, Observed())
    app = create_purple(settings, make_policy=lambda kind="rca_task": policy)
    return ThreadedServer(app, port).start()


def container_memory_mb(owner: str) -> tuple[int, float]:
    """How many task containers of ``owner`` run, and the memory they use together (MB, the
    cgroups' resident memory, page cache not counted); (n, nan) where cgroups are not found."""
    client = docker.from_env()
    try:
        ids = [c.id for c in client.containers.list(filters={"label": f"arena.owner={owner}"})]
    finally:
        client.close()
    total = 0.0
    for cid in ids:
        v1 = Path(f"/sys/fs/cgroup/memory/docker/{cid}/memory.stat")
        v2 = Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/memory.stat")
        stat = v1 if v1.exists() else v2
        if not stat.exists():
            return len(ids), float("nan")
        fields = dict(line.split() for line in stat.read_text().splitlines())
        total += int(fields.get("total_rss", fields.get("anon", 0)))
    return len(ids), total / 2**20


def holds(service: ServiceProcess) -> ProcStats:
    """What the service's process holds now (open files, threads, RSS)."""
    assert service.proc is not None
    return proc_stats(service.proc.pid)


def percentiles(seconds: list[float]) -> str:
    """``p50 … ms, p95 … ms`` of some durations (``none`` for none)."""
    if not seconds:
        return "none"
    ms = sorted(s * 1000 for s in seconds)
    return f"p50 {statistics.median(ms):.1f} ms, p95 {ms[int(0.95 * (len(ms) - 1))]:.1f} ms"


def p95(seconds: list[float]) -> float:
    return sorted(seconds)[int(0.95 * (len(seconds) - 1))]
