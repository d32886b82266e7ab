"""The run page's plots draw what the run's tables say: each group aggregated as the whole run is
(a task's trials averaged first, failures 0, unscorable tasks left out, n = tasks, 95% intervals),
not a mean over the attempts that happen to carry scores."""

from __future__ import annotations

import re

import pytest

from services.green.ui import plots
from services.shared.outcome import TaskOutcome, TaskStatus
from services.shared.scores import aggregate

METRICS = ["file@1", "iou"]


def _aggregate(outcomes: list[TaskOutcome]) -> dict:
    return aggregate(outcomes, METRICS).to_dict()


def _point(ref: str, trial: int, status: str, scores: dict | None, group: str) -> plots.Point:
    failure = {"failed": "agent"}.get(status)
    outcome = TaskOutcome(
        kind="arvo", ref_id=ref, trial=trial, status=TaskStatus(status), failure_kind=failure,
        scores=scores,
    )  # fmt: skip
    return plots.Point(outcome=outcome, bug_class=group, fix_position=group)


HIT = {"file@1": 1.0, "iou": 0.5, "submitted": True, "project": "p1"}
MISS = {"file@1": 0.0, "iou": 0.0, "submitted": True, "project": "p2"}


def test_a_group_is_aggregated_over_its_tasks_as_the_run_is():
    points = [
        _point("1", 1, "completed", HIT, "heap"),  # task 1: hit, then miss: 0.5
        _point("1", 2, "completed", {**MISS, "project": "p1"}, "heap"),
        _point("2", 1, "failed", None, "heap"),  # an agent failure: 0, and counted
        _point("3", 1, "completed", {"scorable": False, "submitted": True}, "heap"),  # left out
        _point("4", 1, "completed", HIT, "stack"),
        _point("5", 1, "completed", {"scorable": False}, "uaf"),  # no scorable task: no group
    ]
    aggs = plots.group_aggregates(points, "bug_class", _aggregate)
    assert list(aggs) == ["heap", "stack"]
    heap = aggs["heap"]
    assert heap["mean_all"]["n"] == 2  # tasks, not the four attempts
    assert heap["mean_all"]["file@1"] == pytest.approx(0.25)  # (0.5 + 0) / 2
    interval = heap["uncertainty"]["mean_all"]["file@1"]
    assert interval["ci_low"] < 0.25 < interval["ci_high"]
    assert aggs["stack"]["uncertainty"]["mean_all"]["file@1"]["no_interval"] == "one task"


@pytest.mark.parametrize("name", plots.PLOTS)
def test_every_plot_draws_a_run_with_trials_failures_and_no_intervals(name):
    points = [
        _point("1", 1, "completed", HIT, "heap"),
        _point("1", 2, "failed", None, "heap"),
        _point("4", 1, "completed", MISS, "stack"),
    ]
    svg = plots.render(name, points, _aggregate)
    assert svg.startswith(b"<?xml") and b"</svg>" in svg
    assert plots.render(name, [], _aggregate).startswith(b"<?xml")


def test_the_cost_axis_starts_at_zero_when_no_attempt_cost_anything():
    """An offline agent costs nothing: the axis is not centred on 0 (from -0.04 to 0.04 USD)."""
    points = [_point("1", 1, "completed", HIT, "heap"), _point("4", 1, "completed", MISS, "x")]
    svg = plots.render("cost", points, _aggregate).decode()
    ticks = re.findall(r"<!-- (.*?) -->", svg)
    assert "0.0" in ticks or "0.00" in ticks, ticks
    assert not [t for t in ticks if t.startswith(("\u2212", "-"))], ticks
    assert any("no model was paid" in t for t in ticks), ticks
