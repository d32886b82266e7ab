"""Eight tasks at once, two per ARVO id: each has its own container, workspace and context."""

from __future__ import annotations

import concurrent.futures as cf

import pytest

from tests.integration.conftest import leftover_containers
from tests.integration.helpers import submit_task, wait_terminal
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

IDS = ["900001", "900002", "900003", "900004"]


def test_eight_concurrent_tasks_stay_isolated(
    start_green, scripted_purple, docker_client, green_settings
):
    purple_url, seen = scripted_purple(
        Script(
            commands=[
                "echo {task_id} > /workspace/shared/owner && echo {task_id} > /tmp/owner",
                "sleep 1; cat /workspace/shared/owner /tmp/owner; ls /workspace/shared | wc -l",
                "hostname",
            ],
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green(purple_url=purple_url, max_concurrent_tasks=8)

    with cf.ThreadPoolExecutor(8) as pool:
        tasks = list(pool.map(lambda i: submit_task(green.url, {"arvo_id": int(i)}), IDS * 2))
        done = list(pool.map(lambda t: wait_terminal(green.url, t["id"], 240), tasks))

    assert [d["status"] for d in done] == ["completed"] * 8, [d["error"] for d in done]
    assert len({d["container_name"] for d in done}) == 8
    # each task saw only what it wrote itself: results come in per-task order of 3 commands
    by_owner: dict[str, list[str]] = {}
    for r in seen.results:
        lines = r.output.split()
        if len(lines) == 3 and lines[0] == lines[1]:
            by_owner.setdefault(lines[0], []).append(lines[2])
    assert set(by_owner) == {t["id"] for t in tasks}
    assert all(counts == ["1"] for counts in by_owner.values()), by_owner
    hostnames = [
        r.output.strip()
        for r in seen.results
        if r.output.strip() and len(r.output.split()) == 1 and r.output.strip() not in by_owner
    ]
    assert len(set(hostnames)) == 8
    assert leftover_containers(docker_client, green.owner) == []
    # logs: each task's lines are in its own ARVO file only, from both services, never doubled
    run_dir = green_settings.log_dir / "log_test"
    logs = {i: (run_dir / f"arvo_{i}.log").read_text() for i in IDS}
    for t in tasks:
        homes = [i for i, text in logs.items() if t["id"] in text]
        assert homes == [t["arvo_id"]], (t["id"], homes)
    for text in logs.values():
        lines = [ln for ln in text.splitlines() if "event=command.executed" in ln]
        assert len(lines) == len(set(lines)) == 2 * 4  # two tasks x (3 commands + loc.json)
        assert "service=purple" not in text  # purple is never told the bug id
    for t in tasks:  # purple's lines are keyed by the task's context id instead
        purple_log = (run_dir / f"task_{t['id']}.log").read_text()
        assert "service=purple" in purple_log and t["arvo_id"] not in purple_log
    assert not any(t["id"] in (run_dir / "agents.log").read_text() for t in tasks)
