"""A run of several kinds: each metric over the tasks of the kind that declares it (its own n,
clusters, interval, pass@k set and floors), never 0 for the tasks of another kind; the flat
leaderboard row carries every kind's metrics, each with its own n."""

from __future__ import annotations

import pytest

from services.shared.outcome import TaskOutcome
from services.shared.scores import (
    aggregate,
    aggregate_kinds,
    flat_scores,
    kind_aggregates,
)

LOCATE = ("file@1", "func@1", "iou")
REPRODUCE = ("reproduced", "same_bug")
FIX = ("applied", "crash_fixed", "resolved")
KINDS = {"arvo": LOCATE, "arvo-poc": REPRODUCE, "arvo-fix": FIX}


def _mixed(trials: int = 1) -> list[TaskOutcome]:
    """The audit's run: 4 locate tasks that all hit, 4 reproduce tasks that all reproduce
    (2 of the same bug), 4 fix tasks (2 resolved), each task its own project."""
    outs = []
    for kind, metrics in KINDS.items():
        for i in range(4):
            scores = dict.fromkeys(metrics, 1.0)
            if kind == "arvo-poc":
                scores["same_bug"] = float(i < 2)
            if kind == "arvo-fix":
                scores |= {"crash_fixed": float(i < 2), "resolved": float(i < 2)}
            scores |= {"project": f"{kind}-p{i}", "floors": {"empty": dict.fromkeys(metrics, 0.0)}}
            for t in range(1, trials + 1):
                outs.append(
                    TaskOutcome(
                        kind=kind, ref_id=str(i), trial=t, status="completed", scores=scores
                    )
                )
    return outs


def test_each_metric_is_a_mean_over_its_own_kinds_tasks() -> None:
    agg = aggregate_kinds(_mixed(), lambda kind: KINDS[kind])
    kinds = kind_aggregates(agg)
    assert list(kinds) == list(KINDS)
    locate, poc, fix = kinds["arvo"], kinds["arvo-poc"], kinds["arvo-fix"]
    assert locate["kind"] == "arvo" and locate["metrics"] == list(LOCATE)
    assert locate["mean_all"] == {"n": 4, "file@1": 1.0, "func@1": 1.0, "iou": 1.0}
    iv = locate["uncertainty"]["mean_all"]["file@1"]
    assert (iv["n"], iv["n_clusters"], iv["ci_high"]) == (4, 4, 1.0)
    assert iv["ci_low"] == pytest.approx(0.025 ** (1 / 4), abs=1e-6)  # Clopper-Pearson, 4/4
    assert poc["mean_all"]["reproduced"] == 1.0 and poc["mean_all"]["same_bug"] == 0.5
    assert fix["mean_all"]["resolved"] == 0.5 and fix["mean_all"]["n"] == 4
    assert fix["floors"]["n"] == 4 and "file@1" not in fix["floors"]["empty"]
    assert all(a["n_tasks"] == 4 for a in kinds.values())


def test_pass_at_k_is_over_each_kinds_own_task_set() -> None:
    kinds = kind_aggregates(aggregate_kinds(_mixed(trials=2), lambda kind: KINDS[kind]))
    assert kinds["arvo"]["trials"]["file@1"]["n"] == 4
    assert kinds["arvo"]["trials"]["file@1"]["pass@2"] == 1.0
    assert kinds["arvo-fix"]["trials"]["resolved"]["pass@2"] == 0.5


def test_one_kind_keeps_its_aggregate_at_the_top_and_one_aggregate_refuses_two_kinds() -> None:
    locate = [o for o in _mixed() if o.kind == "arvo"]
    one = aggregate_kinds(locate, lambda kind: KINDS[kind])
    assert one == aggregate(locate, LOCATE).to_dict() and one["kind"] == "arvo"
    assert kind_aggregates(one) == {"arvo": one}
    with pytest.raises(ValueError, match="3 kinds"):
        aggregate(_mixed(), [*LOCATE, *REPRODUCE, *FIX])


def test_the_flat_row_of_a_mixed_run_has_every_metric_with_its_own_n() -> None:
    flat = flat_scores(aggregate_kinds(_mixed(), lambda kind: KINDS[kind]))
    assert flat["kinds"] == "arvo,arvo-poc,arvo-fix"
    assert flat["file_at_1"] == 1.0 and flat["file_at_1_n"] == 4
    assert flat["file_at_1_n_clusters"] == 4 and flat["reproduced"] == 1.0
    assert flat["resolved"] == 0.5 and flat["resolved_n"] == 4
    assert flat["n_tasks"] == 12 and flat["n_completed"] == 12
    assert flat["n_mean_all"] is None and flat["n_clusters"] is None  # per kind: per metric


def test_a_metric_two_kinds_declare_is_kept_apart_in_the_flat_row() -> None:
    outs = [
        TaskOutcome(kind=k, ref_id="1", status="completed", scores={"resolved": v})
        for k, v in (("arvo-fix", 1.0), ("swebench", 0.0))
    ]
    flat = flat_scores(aggregate_kinds(outs))
    assert flat["arvo_fix_resolved"] == 1.0 and flat["swebench_resolved"] == 0.0
    assert "resolved" not in flat
