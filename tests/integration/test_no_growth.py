"""Nothing a service holds grows with the number of tasks it has served: real green and purple
processes (purple's offline analyst) run tasks in batches, and their open files are read from
``/proc`` after each batch (and their threads; green's against its count at start)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.integration.helpers import submit_task, wait_terminal
from tests.integration.test_green_replicas import green_env
from tests.support.proc_stats import ProcStats, proc_stats
from tests.support.servers import ServiceProcess, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]

IDS = ["900001", "900002", "900003", "900004"]


@pytest.fixture
def services(green_settings, tmp_path: Path):
    purple_port = free_port()
    purple = ServiceProcess(
        "services.purple",
        purple_port,
        {
            "PURPLE_POLICY": "stacktrace",
            "PURPLE_LOG_DIR": str(tmp_path / "logs"),
            "PURPLE_TRAJECTORY_DIR": str(tmp_path / "traj"),
            "PURPLE_MAX_CONCURRENT_TASKS": "16",
        },
        tmp_path / "purple.out",
    ).start()
    port = free_port()
    green = ServiceProcess(
        "services.green",
        port,
        {
            **green_env(green_settings, green_settings.database_url, f"growth-{port}"),
            "GREEN_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "GREEN_PURPLE_URL": purple.url,
            "GREEN_PURPLE_POLL_S": "0.5",
            "GREEN_MAX_CONCURRENT_TASKS": "6",
            "GREEN_CONTAINER_MEMORY": "512m",
            "GREEN_INTAKE_PER_MINUTE": "10000",
        },
        tmp_path / "green.out",
    ).start()
    yield green, purple
    green.stop()
    purple.stop()


def _batch(green_url: str, n: int) -> None:
    ids = [submit_task(green_url, {"task": f"arvo:{IDS[i % 4]}"})["id"] for i in range(n)]
    for task_id in ids:
        assert wait_terminal(green_url, task_id, timeout=300)["status"] == "completed"


def _settled(pids: dict[str, int], seconds: float = 5.0) -> dict[str, ProcStats]:
    """Each process's fewest open files and fewest threads over ``seconds`` after a batch (the
    processes sampled together): what it still holds once what the batch's last tasks left for
    a moment (a thread, a connection) has ended. A leak stays; it grows by one or more per task
    (32 a batch), which no minimum hides."""
    samples: dict[str, list[ProcStats]] = {name: [] for name in pids}
    deadline = time.monotonic() + seconds
    while True:
        for name, pid in pids.items():
            samples[name].append(proc_stats(pid))
        if time.monotonic() > deadline:
            return {
                name: ProcStats(
                    fds=min(r.fds for r in s),
                    threads=min(r.threads for r in s),
                    rss_mb=min(r.rss_mb for r in s),
                )
                for name, s in samples.items()
            }
        time.sleep(0.25)


def test_open_files_and_threads_do_not_grow_with_the_tasks_served(services) -> None:
    """Purple kept one log file open per task it had served (``task_<id>.log``): at the default
    1,024 descriptors it died after about 1,000 tasks. Green's thread pools all start with it, so
    a green at rest holds no more threads after a busy spell than at its start. Purple's plain
    ``def`` routes run in the server's worker pool, whose threads (at most 40) start as
    concurrent requests first need them and stay while idle: purple is held to no growth over
    the last 32 tasks, which a thread left per task would exceed."""
    green, purple = services
    pids = {"green": green.proc.pid, "purple": purple.proc.pid}
    started = _settled(pids)
    # warm: the first images, then thread and connection pools filled up to their bounds (the
    # database's threads and their connections are started as the load first needs them)
    _batch(green.url, 8)
    _batch(green.url, 32)
    before = _settled(pids)
    _batch(green.url, 32)
    after = _settled(pids)
    for name in before:
        print(
            f"{name}: at start {started[name]}; after 40 tasks {before[name]}; after 72 {after[name]}"
        )
    for name in before:
        assert after[name].fds <= before[name].fds + 4, (name, before[name], after[name])
        assert after[name].threads <= before[name].threads + 4, (name, before[name], after[name])
    assert after["green"].threads <= started["green"].threads, (started["green"], after["green"])
