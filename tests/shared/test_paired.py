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
    assert view.lost == {"swebench:c": "failed (infra)", "swebench:d": "not run"}
    other = paired.run_view(
        "s", ["swebench:a", "swebench:b"], [_hit("swebench:a", 0.0), _hit("swebench:b", 0.0)]
    )
    pair = paired.compare_pair(view, other)
    assert pair["n_common"] == 2 and pair["metrics"]["file@1"]["difference"]["mean"] == 0.75
    assert pair["metrics"]["file@1"]["mcnemar"]["only_a"] == 1  # 0.5 is not more than half
    assert pair["lost"]["swebench:c"] == {"a": "failed (infra)", "b": "not in the run"}
    assert "mcnemar" not in pair["metrics"]["iou"]  # continuous: values other than 0 and 1
    assert pair["binary"] == list(METRICS) and list(pair["metrics"]) == [*METRICS, "iou"]


def test_conflicts_name_the_task_within_and_across_runs() -> None:
    same = paired.decisive_of({"scoring": {"version": "v1"}, "image": {"id": "sha256:1"}})
    moved = paired.decisive_of({"scoring": {"version": "v1"}, "image": {"id": "sha256:2"}})
    newer = paired.decisive_of({"scoring": {"version": "v2"}, "image": {"id": "sha256:1"}})
    assert paired.decisive_conflicts([("A", [("k:1", same)]), ("B", [("k:1", same)])]) == []
    (one,) = paired.decisive_conflicts([("A", [("k:1", same)]), ("B", [("k:1", moved)])])
    assert one == "task k:1 was scored with a different image digest (A: sha256:1; B: sha256:2)"
    (trial,) = paired.decisive_conflicts([("A", [("k:2", same), ("k:2", newer)])])
    assert "k:2" in trial and "scoring rule version" in trial
    assert paired.decisive_conflicts([("A", [("k:3", None)]), ("B", [("k:3", moved)])]) == []
