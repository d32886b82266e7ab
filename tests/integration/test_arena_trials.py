"""``arena run --trials 3`` on the fixtures against a real green and a scripted purple that hits
a known share: each trial is its own green task with its trial index, and the report's pass@k and
pass^k equal the closed forms on the observed counts."""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest
from typer.testing import CliRunner

from services.arena.app import app
from tests.integration.helpers import OPERATOR_TOKEN
from tests.support.scripted_purple import Script

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASKS = ("900001", "900002", "900003")
HIT = {"900001": "src/entity.c", "900002": "src/rle.c", "900003": "lib/archive.c"}
MISS = {"900001": "src/lexer.c", "900002": "src/colormap.c", "900003": "lib/header.c"}
# per call, in arrival order (concurrency 1: 900001 x3, 900002 x3, 900003 x3)
PATTERN = [True, False, True, True, True, True, False, False, False]


def _loc(files: dict[str, str]) -> list[dict | str]:
    """One loc.json per project: only the one naming a file of the task's project is accepted."""
    return [{"locations": [{"file": f, "line_start": 1, "line_end": 1}]} for f in files.values()]


def run_trials(tmp_path: Path, start_green, scripted_purple, run: str, pattern) -> Path:
    green = start_green()
    purple, observed = scripted_purple(
        Script(commands=["ls"], per_call=[_loc(HIT if hit else MISS) for hit in pattern])
    )
    out = tmp_path / "results"
    args = ["run", *TASKS, "--green", green.url, "--purple", purple, "--run", run]
    args += ["--out", str(out), "--trials", "3", "--concurrency", "1", "--poll-interval", "0.2"]
    res = CliRunner().invoke(app, [*args, "--api-token", OPERATOR_TOKEN])
    assert res.exit_code == 0, res.output
    assert len(observed.task_ids) == 9
    return out / run


def test_trials_report_pass_at_k_equals_the_closed_forms(tmp_path, start_green, scripted_purple):
    run_dir = run_trials(tmp_path, start_green, scripted_purple, "t3", PATTERN)
    results = json.loads((run_dir / "results.json").read_text())
    tasks = results["tasks"]
    assert len(tasks) == 9 and results["trials"] == 3
    assert {(t["ref_id"], t["trial"]) for t in tasks} == {(a, k) for a in TASKS for k in (1, 2, 3)}
    # each trial was its own green task, carrying its trial index
    assert len({t["task_id"] for t in tasks}) == 9
    for t in tasks:
        green_view = json.loads((run_dir / t["dir"] / "task.json").read_text())
        assert green_view["trial"] == t["trial"]
    # observed counts per task (n attempts, c hits on file@1)
    counts = {a: (0, 0) for a in TASKS}
    for t in tasks:
        n, c = counts[t["ref_id"]]
        counts[t["ref_id"]] = (n + 1, c + int(t["scores"]["file@1"] == 1.0))
    assert sorted(c for _, c in counts.values()) == [0, 2, 3]  # the known share: 5 of 9
    trials = results["aggregate"]["trials"]["file@1"]
    assert trials["n"] == 3 and results["aggregate"]["trials"]["n_fewer"] == 0
    for k in (1, 2, 3):
        at_k = sum(1 - comb(n - c, k) / comb(n, k) for n, c in counts.values()) / 3
        hat_k = sum(comb(c, k) / comb(n, k) for n, c in counts.values()) / 3
        assert trials[f"pass@{k}"] == pytest.approx(at_k, abs=1e-6)
        assert trials[f"pass^{k}"] == pytest.approx(hat_k, abs=1e-6)
    assert trials["consistency"] == pytest.approx(2 / 3, abs=1e-6)
    # the mean over trials: each task's trials averaged first
    mean = results["aggregate"]["mean_all"]["file@1"]
    assert mean == pytest.approx(sum(c / n for n, c in counts.values()) / 3, abs=1e-6)
    iv = results["aggregate"]["uncertainty"]["mean_all"]["file@1"]
    assert iv["n"] == 3 and iv["ci_low"] <= mean <= iv["ci_high"]
    report = (run_dir / "report.md").read_text()
    assert "## Repeated trials" in report
    # the audit: the script only ran `ls`, so its submitted files were never named in a command
    assert all("unopened_locations" in t["audit"] for t in tasks)
    assert not any("git_history" in t["audit"] or "network" in t["audit"] for t in tasks)
    assert "| submitted locations in files never named in a command | 9 |" in report
    row = next(line for line in report.splitlines() if line.startswith("| file@1 | 3 |"))
    assert f"{trials['pass@2']:.3f}" in row and f"{trials['pass^3']:.3f}" in row
