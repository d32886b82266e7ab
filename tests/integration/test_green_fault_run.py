"""One run with every fault injected: cancels during preparation, purple killed and restarted,
the Docker engine unreachable for 15 s. Every task's failure kind follows the written rule
(docs/scoring.md), no task stays running long after purple died, and no container is left
30 s after the engine is back.
"""

from __future__ import annotations

import secrets
import time
from pathlib import Path

import pytest

from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, submit_task, wait_for, wait_status, wait_terminal
from tests.support import web
from tests.support.docker_proxy import DockerProxy

pytestmark = pytest.mark.docker


def _steps(green_url: str, task_id: str) -> int:
    return web.get(f"{green_url}/tasks/{task_id}", headers=OPERATOR, timeout=10).json()["steps"]


def _wait_steps(green_url: str, task_id: str, n: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while _steps(green_url, task_id) < n:
        assert time.monotonic() < deadline, f"task {task_id} never ran {n} commands"
        time.sleep(0.2)


def test_one_run_with_every_fault(
    start_green, llm_purple_process, docker_client, monkeypatch
) -> None:
    proxy = DockerProxy(Path(f"/tmp/arena-proxy-{secrets.token_hex(4)}.sock")).start()
    try:
        monkeypatch.setenv("DOCKER_HOST", proxy.url)
        purple = llm_purple_process.start()
        green = start_green(
            purple_url=purple.url,
            idle_timeout_s=300,
            purple_lost_after_s=20,
            cleanup_retry_s=1.0,
        )
        submit = lambda arvo: submit_task(green.url, {"task": f"arvo:{arvo}"})["id"]  # noqa: E731

        # 1. cancels during preparation
        cancelled = []
        for _ in range(3):
            task_id = submit(900002)
            wait_for(green.url, task_id, {"preparing"})
            time.sleep(0.15)
            web.post(f"{green.url}/tasks/{task_id}/cancel", headers=OPERATOR, timeout=60)
            cancelled.append(task_id)

        # 2. purple killed and restarted while two tasks run
        lost = [submit(900001), submit(900003)]
        for task_id in lost:
            wait_status(green.url, task_id, "running")
            _wait_steps(green.url, task_id, 2)
        purple.kill()
        died = time.monotonic()
        purple.start()
        for task_id in lost:
            wait_terminal(green.url, task_id, timeout=120)
        assert time.monotonic() - died < 60, "a task stayed running > 60 s after purple died"

        # 3. the engine unreachable while two tasks run: both end while it is still down (their
        # containers cannot be removed yet: the janitor does it once the engine is back)
        broken = [submit(900004), submit(900005)]
        for task_id in broken:
            wait_status(green.url, task_id, "running")
            _wait_steps(green.url, task_id, 1)
        proxy.stop()
        for task_id in broken:
            wait_terminal(green.url, task_id, timeout=120)
        proxy.start()
        back = time.monotonic()
        while leftover_containers(docker_client, green.owner) and time.monotonic() - back < 30:
            time.sleep(0.5)
        assert leftover_containers(docker_client, green.owner) == [], "containers left"

        tasks = {
            t: web.get(f"{green.url}/tasks/{t}", headers=OPERATOR, timeout=10).json()
            for t in cancelled + lost + broken
        }
        for t in cancelled:
            assert tasks[t]["status"] == "cancelled", tasks[t]
        for t in lost:  # purple is the agent: its death is the agent's failure, named
            assert (tasks[t]["status"], tasks[t]["failure_kind"]) == ("failed", "agent"), tasks[t]
            assert tasks[t]["end_reason"] == "purple_lost" and purple.url in tasks[t]["error"]
        for t in broken:  # the engine's outage: infra
            assert (tasks[t]["status"], tasks[t]["failure_kind"]) == ("failed", "infra"), tasks[t]
    finally:
        proxy.stop()
