"""The kind-neutral paired comparison (services/shared/paired.py): task views, lost tasks and the
provenance check that arena compare and the dashboard share."""

from __future__ import annotations

from services.shared import paired

METRICS = ("file@1", "file@5", "func@1", "func@5", "line@1", "line@5")


def _hit(task: str, value: float, **kw) -> paired.Attempt:
    scores = {**dict.fromkeys(METRICS, value), "iou": value * 0.4, "submitted": True}
    scores["project"] = f"p-{task}"
    return paired.Attempt(task, kw.pop("status", "completed"), scores=scores, **kw)


def test_trials_average_agent_failures_count_zero_infra_is_lost() -> None:
    attempts = [
        _hit("swebench:a", 1.0),
        paired.Attempt("swebench:a", "failed", "agent", "step_limit"),
        _hit("swebench:b", 1.0),
        paired.Attempt("swebench:c", "failed", "infra", "container_error"),
    ]
    view = paired.run_view("r", ["swebench:a", "swebench:b", "swebench:c", "swebench:d"], attempts)
    assert view.tasks["swebench:a"].means["file@1"] == 0.5 and view.tasks["swebench:a"].trials == 2
    assert view.lost == {"swebench:c": "failed (infra: container_error)", "swebench:d": "not run"}
    other = paired.run_view(
        "s", ["swebench:a", "swebench:b"], [_hit("swebench:a", 0.0), _hit("swebench:b", 0.0)]
    )
    pair = paired.compare_pair(view, other)
    assert pair["n_common"] == 2 and pair["metrics"]["file@1"]["difference"]["mean"] == 0.75
    assert "mcnemar" not in pair["metrics"]["file@1"]  # one procedure: the sign-flip test
    assert pair["metrics"]["file@1"]["difference"]["method"] == "sign-flip exact"
    assert pair["not_compared"] == {
        "swebench:c": {"a": "failed (infra: container_error)", "b": "not in the run"},
        "swebench:d": {"a": "not run", "b": "not in the run"},
    }
    assert pair["binary"] == list(METRICS) and list(pair["metrics"]) == [*METRICS, "iou"]


def test_every_task_not_scored_by_both_is_listed_with_each_sides_reason() -> None:
    """Two task sets: before, the tasks only one run had were dropped without a word."""
    refused = paired.Attempt(
        "arvo:5", "failed", "infra", "rejected", error="green refused the task (HTTP 404)"
    )
    empty = paired.Attempt("arvo:6", "completed", scores={"file@1": 0.0, "scorable": False})
    a = paired.run_view(
        "A",
        ["arvo:1", "arvo:2", "arvo:5", "arvo:6"],
        [_hit("arvo:1", 1.0), _hit("arvo:2", 1.0), refused, empty],
    )
    b = paired.run_view("B", ["arvo:1", "arvo:3"], [_hit("arvo:1", 0.0), _hit("arvo:3", 1.0)])
    pair = paired.compare_pair(a, b)
    assert pair["tasks"] == ["arvo:1"]
    assert pair["not_compared"] == {
        "arvo:2": {"a": "scored", "b": "not in the run"},
        "arvo:5": {"a": "green refused the task (HTTP 404)", "b": "not in the run"},
        "arvo:6": {"a": "unscorable (empty ground truth)", "b": "not in the run"},
        "arvo:3": {"a": "not in the run", "b": "scored"},
    }
    assert pair["unscorable"] == ["arvo:6"]
