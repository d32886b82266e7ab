"""The report's breakdown by bug class and by fix position (services/arena/breakdown.py)."""

from __future__ import annotations

import pytest

from services.arena.breakdown import breakdown, breakdown_markdown, known_labels
from services.arena.report import render_markdown
from services.arena.results import RunOutcome, RunResults

METRICS = ["file@1", "func@1"]


def outcome(ident: str, func1: float, status: str = "completed") -> RunOutcome:
    scores = {"file@1": 1.0, "func@1": func1} if status == "completed" else None
    kind = "agent" if status == "failed" else None
    return RunOutcome(
        ref=f"arvo:{ident}", task_id=f"t{ident}", status=status, scores=scores, failure_kind=kind
    )


LABELS = {
    "arvo:1": {"bug_class": "heap-use-after-free", "fix_position": "free-stack"},
    "arvo:2": {"bug_class": "heap-buffer-overflow", "fix_position": "caller"},
    "arvo:3": {"bug_class": "heap-buffer-overflow", "fix_position": "crash-frame"},
}


def test_breakdown_means_per_group_count_failures_as_zero() -> None:
    outs = [outcome("1", 0.0), outcome("2", 1.0), outcome("3", 0.0, "failed"), outcome("9", 1)]
    rows = breakdown(outs, lambda o: LABELS.get(o.ref, {}).get("bug_class", ""), METRICS)
    by = {r["group"]: r for r in rows}
    assert by["heap-buffer-overflow"]["n"] == 2
    assert by["heap-buffer-overflow"]["func@1"]["mean"] == 0.5  # the failed task counts 0
    assert by["heap-buffer-overflow"]["file@1"]["mean"] == 0.5
    assert by["heap-use-after-free"]["func@1"]["mean"] == 0.0
    assert by["unlabelled"]["n"] == 1


def test_breakdown_is_over_tasks_with_the_aggregates_rules_and_intervals() -> None:
    """Before: attempts averaged and counted as n, unscorable tasks scored 0, no interval."""
    trials = [
        RunOutcome(ref="arvo:2", trial=t, status="completed", scores={"file@1": 1.0, "func@1": f})
        for t, f in ((1, 1.0), (2, 0.0), (3, 0.0))
    ]
    empty = RunOutcome(
        ref="arvo:3", status="completed", scores={"file@1": 0.0, "func@1": 0.0, "scorable": False}
    )
    rows = breakdown([*trials, empty], lambda o: "g", METRICS)
    (g,) = rows
    assert g["n"] == 1  # one task (three trials), the unscorable one left out
    assert g["func@1"]["mean"] == pytest.approx(1 / 3, abs=1e-6)
    assert g["func@1"]["no_interval"] == "one task"
    two = breakdown([outcome("1", 1.0), outcome("2", 0.0)], lambda o: "g", METRICS)[0]
    assert two["func@1"]["method"] == "clopper-pearson" and two["func@1"]["ci_low"] > 0


def test_markdown_has_both_tables_only_with_labels() -> None:
    outs = [outcome("1", 0.0), outcome("2", 1.0)]
    lines = "\n".join(breakdown_markdown(outs, LABELS, METRICS))
    assert "## By bug class" in lines and "## By fix position" in lines
    assert "| fix position | n | file@1 | func@1 |" in lines
    assert "| free-stack | 1 | 1.000 [n/a: one task] | 0.000 [n/a: one task] |" in lines
    assert breakdown_markdown(outs, {}, METRICS) == []
    results = RunResults(run="r", green="g", task_ids=["1", "2"], tasks=outs)
    assert "## By fix position" in render_markdown(results, None, LABELS)
    assert "## By fix position" not in render_markdown(results, None, {})


def test_the_bundled_fixtures_are_labelled() -> None:
    labels = known_labels()
    assert labels["arvo:900008"] == {
        "bug_class": "heap-use-after-free",
        "fix_position": "free-stack",
    }
    positions = {v["fix_position"] for v in labels.values()}
    assert positions == {"crash-frame", "caller", "free-stack", "off-stack"}
