"""The first hour of ``arena run``, as a newcomer meets it right after ``make demo``.

Green serves an asset folder in which only the demo task is built (what ``make demo`` leaves):
``arena run`` on two tasks not built yet stops before anything starts, names both, prints the
command that builds each and exits non-zero; once they are built, the same command writes each
task's ``trajectory.json`` (through green: no purple address is given to the CLI), and the run
is a named run on the dashboard, with its tasks and labels that read right, in a real browser.

Real green, the real offline analyst as purple, real task containers, Debian's chromium; the
CLI runs as a user runs it (its own process).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.catalog import REPO_ROOT
from tests.support import web

pytestmark = [pytest.mark.docker, pytest.mark.browser, pytest.mark.slow]

TOKEN = "first-hour-token"
TASKS = ("900001", "900002")


def arena(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.arena", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "ARENA_API_TOKEN": TOKEN},
    )


def test_arena_run_refuses_unbuilt_tasks_then_is_a_named_run_with_trajectories(
    tmp_path: Path, fixture_assets: Path, start_green, analyst_url: str, page, shoot
) -> None:
    assets = tmp_path / "assets"  # as `make demo` leaves build/assets: only its task built
    assets.mkdir()
    shutil.copy(fixture_assets / "arena-source.json", assets)
    shutil.copytree(fixture_assets / "900007", assets / "900007")
    green = start_green(asset_source=str(assets), purple_url=analyst_url, api_token=TOKEN)
    out = tmp_path / "results"
    run = ["run", *(f"arvo:{t}" for t in TASKS), "--green", green.url, "--run", "first-hour"]
    run += ["--out", str(out), "--poll-interval", "0.2"]

    refused = arena(*run)
    said = " ".join(refused.stdout.split())
    assert refused.returncode == 4, refused.stdout + refused.stderr
    assert "green does not know 2 of the run's tasks" in said
    for t in TASKS:
        assert f"build it with: uv run python -m fixtures.build --only {t}" in said
    assert not (out / "first-hour").exists()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert web.get(f"{green.url}/tasks", headers=auth).json()["total"] == 0  # nothing started

    for t in TASKS:  # "build" them: the fixture build's output, as the printed command makes it
        shutil.copytree(fixture_assets / t, assets / t)
    done = arena(*run)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((out / "first-hour" / "results.json").read_text())
    assert [t["status"] for t in results["tasks"]] == ["completed", "completed"]
    for t in results["tasks"]:
        assert t["trajectory"] is True, t["notes"]
        trajectory = json.loads((out / "first-hour" / t["dir"] / "trajectory.json").read_text())
        assert trajectory["policy"] == "stack-trace-analyst" and trajectory["steps"]
    run_id = results["green_run"]
    record = web.get(f"{green.url}/assessments/{run_id}", headers=auth).json()
    assert record["request"]["name"] == "first-hour" and record["status"] == "completed"
    assert len(record["result"]["tasks"]) == 2

    missing: list[str] = []  # every asset a page asks for is there (the favicon too)
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    page.goto(f"{green.url}/ui/login")
    page.fill("#token", TOKEN)
    page.click("form.stack button[type=submit]")
    page.goto(f"{green.url}/ui")
    row = page.locator("table.runs tbody tr", has_text="first-hour")
    assert row.count() == 1
    assert "run finished" in row.inner_text() and "2/2" in row.inner_text()
    shoot(page, "arena-run-runs-page")
    row.get_by_role("link", name="first-hour").click()
    page.wait_for_url(f"**/ui/runs/{run_id}")
    assert page.locator("h1").inner_text() == "Run first-hour"
    headers = page.locator("table").last.locator("thead th").all_inner_texts()
    assert headers[:2] == ["id", "task"]  # the uuid under "id", the task's name under "task"
    cells = page.locator("table").last.locator("tbody tr").all_inner_texts()
    assert sorted(c.split("\t")[1] for c in cells) == [f"arvo:{t}" for t in TASKS]
    shoot(page, "arena-run-page")
    page.goto(f"{green.url}/ui/tasks?run={run_id}")
    assert page.locator("thead th").all_inner_texts()[:2] == ["id", "task"]
    page.goto(f"{green.url}/ui/tasks/{results['tasks'][0]['task_id']}/trajectory")
    tokens = page.locator("table tbody tr").first.locator("td").nth(1).inner_text()
    assert tokens.isdigit(), tokens  # a count: 0, never 0.0
    assert web.get(f"{green.url}/favicon.ico").status_code == 200
    assert missing == []
