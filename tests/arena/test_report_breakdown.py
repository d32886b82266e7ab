"""The report's breakdown by bug class and by fix position (services/arena/breakdown.py)."""

from __future__ import annotations

from services.arena.breakdown import breakdown, breakdown_markdown, known_labels
from services.arena.report import render_markdown
from services.arena.results import Outcome, RunResults


def outcome(arvo_id: str, func1: float, status: str = "completed") -> Outcome:
    scores = {"file@1": 1.0, "func@1": func1} if status == "completed" else None
    return Outcome(arvo_id=arvo_id, task_id=f"t{arvo_id}", status=status, scores=scores)


LABELS = {
    "1": {"bug_class": "heap-use-after-free", "fix_position": "free-stack"},
    "2": {"bug_class": "heap-buffer-overflow", "fix_position": "caller"},
    "3": {"bug_class": "heap-buffer-overflow", "fix_position": "crash-frame"},
}


def test_breakdown_means_per_group_count_failures_as_zero() -> None:
    outs = [outcome("1", 0.0), outcome("2", 1.0), outcome("3", 0.0, "failed"), outcome("9", 1)]
    rows = breakdown(outs, lambda o: LABELS.get(o.arvo_id, {}).get("bug_class", ""))
    by = {r["group"]: r for r in rows}
    assert by["heap-buffer-overflow"]["n"] == 2
    assert by["heap-buffer-overflow"]["func@1"] == 0.5  # the failed task counts 0
    assert by["heap-buffer-overflow"]["file@1"] == 0.5
    assert by["heap-use-after-free"]["func@1"] == 0.0
    assert by["unlabelled"]["n"] == 1


def test_markdown_has_both_tables_only_with_labels() -> None:
    outs = [outcome("1", 0.0), outcome("2", 1.0)]
    lines = "\n".join(breakdown_markdown(outs, LABELS))
    assert "## By bug class" in lines and "## By fix position" in lines
    assert "| free-stack | 1 | 1 | 0 | 0 |" in lines  # file@1, file@5, func@1, func@5
    assert breakdown_markdown(outs, {}) == []
    results = RunResults(run="r", green="g", task_ids=["1", "2"], tasks=outs)
    assert "## By fix position" in render_markdown(results, None, LABELS)
    assert "## By fix position" not in render_markdown(results, None, {})


def test_the_bundled_fixtures_are_labelled() -> None:
    labels = known_labels()
    assert labels["900008"] == {"bug_class": "heap-use-after-free", "fix_position": "free-stack"}
    positions = {v["fix_position"] for v in labels.values()}
    assert positions == {"crash-frame", "caller", "free-stack", "off-stack"}
