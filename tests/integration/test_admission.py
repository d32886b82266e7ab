"""Green starts a task only while its engine answers promptly, and no more tasks at once than the
engine takes: a real green on this machine's engine through a forwarder that can make it slow
(tests/support/docker_proxy.py), the fixture tasks, purple's offline analyst.

Before, a burst was limited by the slot count alone: 256 slots on two cores drowned the engine
(its ping went unanswered, it was marked down, and every task failed as infra).
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from services.sandbox.docker.provider import start_slots
from tests.integration.helpers import OPERATOR, TERMINAL, submit_task, wait_terminal
from tests.support import web
from tests.support.docker_proxy import DockerProxy

pytestmark = [pytest.mark.docker, pytest.mark.slow]

IDS = ["900001", "900002", "900003", "900004"]


@pytest.fixture
def proxy():
    proxy = DockerProxy(Path(f"/tmp/arena-admit-{secrets.token_hex(4)}.sock")).start()
    yield proxy
    proxy.delay = lambda request: 0
    proxy.stop()


def _engine(url: str) -> dict:
    [engine] = web.get(f"{url}/healthz", headers=OPERATOR, timeout=30).json()["engines"]
    return engine


def _statuses(url: str, ids: list[str]) -> list[str]:
    rows = web.get(f"{url}/tasks", headers=OPERATOR, params={"limit": 100}, timeout=30).json()
    return [t["status"] for t in rows["items"] if t["id"] in ids]


def test_tasks_wait_in_the_queue_while_the_engine_is_slow(start_green, analyst_url, proxy):
    green = start_green(purple_url=analyst_url, docker_hosts=[proxy.url], docker_check_s=2.0)
    proxy.delay = lambda request: 1.5  # the engine answers, late
    deadline = time.monotonic() + 60
    while _engine(green.url)["prompt"]:
        assert time.monotonic() < deadline, "the engine never looked slow"
        time.sleep(0.2)
    ids = [submit_task(green.url, {"task": f"arvo:{i}"})["id"] for i in IDS[:3]]
    for _ in range(3):  # a few of the dispatcher's rounds: nothing is claimed, nothing fails
        time.sleep(1)
        assert _statuses(green.url, ids) == ["queued"] * 3
    proxy.delay = lambda request: 0
    ended = [wait_terminal(green.url, task_id, timeout=180) for task_id in ids]
    assert [t["status"] for t in ended] == ["completed"] * 3, ended


def test_no_more_tasks_start_at_once_than_the_engine_takes(
    start_green, analyst_url, proxy, docker_client
):
    """A burst on twelve slots: at most start_slots(engine CPUs) tasks (one per CPU but one, at least one) are
    being prepared at once (the rest wait in the queue), and every task completes."""
    green = start_green(purple_url=analyst_url, docker_hosts=[proxy.url], max_concurrent_tasks=12)
    admits = start_slots(docker_client.info()["NCPU"])
    ids = [submit_task(green.url, {"task": f"arvo:{IDS[i % 4]}"})["id"] for i in range(12)]
    most, deadline = 0, time.monotonic() + 300
    while not TERMINAL.issuperset(now := _statuses(green.url, ids)):
        most = max(most, now.count("preparing"))
        assert time.monotonic() < deadline, now
        time.sleep(0.05)
    print(f"\nat most {most} of 12 tasks prepared at once (the engine admits {admits})")
    assert most <= admits
    assert now == ["completed"] * 12, [wait_terminal(green.url, i) for i in ids]
