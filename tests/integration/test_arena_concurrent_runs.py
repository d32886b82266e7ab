"""Complete records. Two agents' ``arena run --trials 2`` at once on the same tasks: green
withholds the floors of a finished task while another task of its bug runs, so each run fetches
its records again once the bug's tasks have all ended; every record ends up with its project and
floors, and the two reports show the same floors (before, a run that ended first kept its
records without them). ``arena report`` repairs an older run from green and names the records it
could not repair."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.catalog import REPO_ROOT
from services.arena.app import app
from tests.integration.helpers import OPERATOR_TOKEN, wait_terminal
from tests.support.scripted_purple import Script

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = ("900001", "900002", "900003")  # three projects: xmlmini, tgadec, tarlite
FILES = ("src/entity.c", "src/rle.c", "lib/archive.c")
LOCS = [{"locations": [{"file": f, "line_start": 1, "line_end": 1}]} for f in FILES]
"""One loc.json per project: each task's own is the one green accepts."""


def _arena_run(green: str, purple: str, out: Path, name: str, concurrency: int):
    args = [sys.executable, "-m", "services.arena", "run", *TASKS, "--green", green]
    args += ["--purple", purple, "--run", name, "--out", str(out), "--trials", "2"]
    args += ["--concurrency", str(concurrency), "--poll-interval", "0.2"]
    return subprocess.Popen(
        [*args, "--api-token", OPERATOR_TOKEN],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _until(done: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.1)


def _floor_rows(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("| floor:")]


def test_two_runs_at_once_record_every_field_and_report_the_same_floors(
    tmp_path, start_green, scripted_purple
):
    # the held tasks wait (idle) while the other run's six run: no deadline may end them first
    green = start_green(max_concurrent_tasks=8, idle_timeout_s=600, task_timeout_s=600)
    hold = threading.Event()
    held, held_seen = scripted_purple(Script(commands=["true"], submissions=LOCS, hold=hold))
    quick, quick_seen = scripted_purple(Script(commands=["true"], submissions=LOCS))
    out = tmp_path / "results"
    runs: list[subprocess.Popen] = []
    try:
        runs.append(_arena_run(green.url, held, out, "held", concurrency=6))
        _until(lambda: len(held_seen.task_ids) == 6, "run 'held' has all its tasks running")
        runs.append(_arena_run(green.url, quick, out, "quick", concurrency=2))
        _until(lambda: len(quick_seen.task_ids) == 6, "run 'quick' started all its tasks")
        for task_id in quick_seen.task_ids:  # run 'quick' ended its tasks while 'held' runs
            assert wait_terminal(green.url, task_id)["status"] == "completed"
        hold.set()
        logs = [p.communicate(timeout=300)[0] for p in runs]
    finally:
        hold.set()
        for p in runs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in runs] == [0, 0], logs

    results = {n: json.loads((out / n / "results.json").read_text()) for n in ("held", "quick")}
    for name, res in results.items():
        assert len(res["tasks"]) == 6, name
        for t in res["tasks"]:
            scores = t["scores"]
            assert scores.get("project"), (name, t["ref"], t["trial"], scores)
            assert set(scores.get("floors") or {}) >= {"empty", "crash_frame"}, (name, t)
            assert (t["disclosed"], t["withheld"]) == ("all", []), (name, t)
            saved = json.loads((out / name / t["dir"] / "task.json").read_text())
            assert saved["scores"]["floors"] == scores["floors"] and saved["ground_truth"]
    assert "withheld by green while other tasks of their bugs run" in logs[1]  # 'quick' waited
    floors = [r["aggregate"]["floors"] for r in results.values()]
    assert floors[0] == floors[1] and floors[0]["n"] == 3
    assert floors[0]["crash_frame"]["file@1"]["mean"] > 0  # the crash frame is some fix's file
    reports = [(out / n / "report.md").read_text() for n in ("held", "quick")]
    assert _floor_rows(reports[0]) == _floor_rows(reports[1]) != []
    assert all("Incomplete records" not in r for r in reports)


def test_arena_report_repairs_an_older_run_from_green_and_names_what_it_could_not(
    tmp_path, start_green, scripted_purple
):
    green = start_green()
    purple, _ = scripted_purple(Script(commands=["true"], submissions=LOCS))
    out = tmp_path / "results"
    args = ["run", *TASKS, "--green", green.url, "--purple", purple, "--run", "old"]
    args += ["--out", str(out), "--poll-interval", "0.2", "--api-token", OPERATOR_TOKEN]
    assert CliRunner().invoke(app, args).exit_code == 0
    path = out / "old" / "results.json"
    # as a run recorded before green said what it withheld, with records that lost fields
    data = json.loads(path.read_text())
    del data["kinds"]["arvo"]["fields"]  # an older green did not say which fields are due
    for t in data["tasks"]:
        del t["disclosed"], t["withheld"]
        for key in ("project", "floors"):
            t["scores"].pop(key)
    gone = data["tasks"][2]
    gone["task_id"] = "00000000-0000-4000-8000-000000000000"  # a task green does not have
    path.write_text(json.dumps(data))

    offline = CliRunner().invoke(app, ["report", str(out / "old"), "--offline"])
    assert offline.exit_code == 0, offline.output
    report = (out / "old" / "report.md").read_text()  # nothing to tell what is due: said so
    assert "3 record(s) were saved before green said what it withheld" in report

    away = CliRunner().invoke(app, ["report", str(out / "old"), "--green", "http://127.0.0.1:9"])
    assert away.exit_code == 0 and "green could not be asked" in away.output

    res = CliRunner().invoke(app, ["report", str(out / "old"), "--api-token", OPERATOR_TOKEN])
    assert res.exit_code == 0, res.output
    assert "2 record(s) fetched again from green" in res.output
    assert "still incomplete: arvo:900003: green no longer has the task" in res.output
    repaired = json.loads(path.read_text())["tasks"]
    for t in repaired[:2]:
        assert t["scores"]["project"] and t["scores"]["floors"] and t["disclosed"] == "all"
    assert "floors" not in repaired[2]["scores"]
    rows = _incomplete((out / "old" / "report.md").read_text())
    assert [r.split(" | ")[0] for r in rows] == ["| arvo:900003"]
    assert "| floors, project | asked green again: green no longer has the task |" in rows[0]


def _incomplete(report: str) -> list[str]:
    """The rows of report.md's "Incomplete records" table."""
    section = report.split("## Incomplete records", 1)[-1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| arvo:")]
