"""`make down && make demo` keeps every result: the demo (scripts/demo.sh, as a user runs it), an
``arena run`` of two trials, then the real ``make down`` and the demo again: every task answers
as it ended, and every dashboard link the run printed (its run page) and each task's page still
answer; the second demo's task is one more. ``make clean`` then deletes the volumes, and says so. Its own compose project, ports,
token and log folders and image tags (:func:`tests.e2e.compose.demo_env`).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import docker
import httpx
import pytest

from fixtures.catalog import REPO_ROOT
from tests.e2e.compose import demo_down, demo_env, require_compose, run_demo

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def _make(target: str, env: dict[str, str]) -> str:
    proc = subprocess.run(
        ["make", "-s", target],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def _demo(env: dict[str, str]) -> None:
    proc = run_demo(env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "completed  end: submitted" in out, out[-3000:]


def _volumes(client: docker.DockerClient, project: str) -> set[str]:
    found = client.volumes.list(filters={"label": f"com.docker.compose.project={project}"})
    return {v.name for v in found}


def _arena_run(env: dict[str, str], url: str, token: str, out: Path) -> list[str]:
    """``arena run`` of the demo task, two trials; the dashboard links it printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "services.arena", "run", "arvo:900007", "--green", url,
         "--run", "kept", "--trials", "2", "--out", str(out)],
        cwd=REPO_ROOT,
        env={**env, "ARENA_API_TOKEN": token, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    links = re.findall(rf"{re.escape(url)}(/ui/\S+)", proc.stdout)
    assert any(link.startswith("/ui/runs/") for link in links), proc.stdout
    return links


def _tasks(green: httpx.Client) -> dict[str, str]:
    """Every task's status."""
    return {
        t["id"]: t["status"] for t in green.get("/tasks", params={"limit": 500}).json()["items"]
    }


def _pages(green: httpx.Client, tasks: dict[str, str], links: list[str]) -> dict[str, int]:
    """Every task's dashboard page and every link ``arena run`` printed, with the answer."""
    paths = [f"/ui/tasks/{t}" for t in tasks] + links
    return {p: green.get(p).status_code for p in paths}


@pytest.mark.timeout(1800)  # two demos (the first may build the images) and a run between
def test_make_down_then_demo_keeps_every_task_run_and_link(tmp_path: Path) -> None:
    client = require_compose()
    env = demo_env(tmp_path, "down-keeps")
    project = env["COMPOSE_PROJECT_NAME"]
    url = f"http://127.0.0.1:{env['ARENA_GREEN_PORT']}"
    try:
        _demo(env)
        token = (tmp_path / "secrets" / "operator-token").read_text().strip()
        auth = {"Authorization": f"Bearer {token}"}
        links = _arena_run(env, url, token, tmp_path / "results")
        with httpx.Client(base_url=url, headers=auth, timeout=30) as green:
            tasks = _tasks(green)
            assert len(tasks) == 3, tasks  # the demo's and the run's two trials
            assert set(_pages(green, tasks, links).values()) == {200}
        volumes = _volumes(client, project)

        out = _make("down", env)
        assert "deleting" not in out, out
        left = client.containers.list(
            all=True, filters={"label": f"com.docker.compose.project={project}"}
        )
        assert left == [], [c.name for c in left]
        assert _volumes(client, project) == volumes  # nothing of the data went

        _demo(env)
        with httpx.Client(base_url=url, headers=auth, timeout=30) as green:
            after = _tasks(green)
            assert {t: after.get(t) for t in tasks} == tasks  # each as it ended
            assert len(after) == len(tasks) + 1  # the second demo's task, one more
            assert set(_pages(green, tasks, links).values()) == {200}

        out = _make("clean", env)
        assert "deleting its volumes" in out, out
        assert _volumes(client, project) == set()
    finally:
        demo_down(env)
