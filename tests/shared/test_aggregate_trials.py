"""The run aggregate with repeated trials and project clusters (services/shared/scores.py)."""

from __future__ import annotations

import pytest

from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate


def _hit(ref: str, trial: int, hit: float, project: str | None = None) -> TaskOutcome:
    scores = {"file@1": hit, "file@5": hit, "submitted": True, "project": project}
    return TaskOutcome(ref_id=ref, trial=trial, status="completed", scores=scores)


def test_trials_are_averaged_per_task_and_infra_attempts_are_not_attempts():
    infra = TaskOutcome(ref_id="1", trial=3, status="failed", failure_kind="infra")
    agg = aggregate([_hit("1", 1, 1.0), _hit("1", 2, 0.0), infra, _hit("2", 1, 1.0)])
    assert (agg.n_tasks, agg.n_attempts) == (2, 4)
    assert agg.mean_all.n == 2
    assert agg.mean_all["file@1"] == pytest.approx(((1 + 0 + 0) / 3 + 1) / 2, abs=1e-6)
    assert agg.mean_non_infra["file@1"] == pytest.approx((0.5 + 1) / 2, abs=1e-6)
    t = agg.trials
    assert t["k"] == 2
    assert t["file@1"]["pass@1"] == pytest.approx(0.75)
    assert t["file@1"]["pass@2"] == 1.0 and t["file@1"]["n@2"] == 1  # task 2 has one attempt
    assert t["file@1"]["pass^2"] == 0.0
    assert t["file@1"]["consistency"] == 0.0 and t["file@1"]["n_consistency"] == 1
    u = agg.uncertainty
    assert u["resamples"] == 2000 and u["seed"] == 0 and "cluster bootstrap" in u["method"]
    assert u["mean_all"]["file@1"]["mean"] == pytest.approx(agg.mean_all["file@1"], abs=1e-6)
    assert u["mean_all"]["file@1"]["n"] == 2


def test_tasks_of_one_project_form_one_cluster():
    outs = [_hit(str(i), 1, float(i < 4), project="a" if i < 4 else "b") for i in range(8)]
    agg = aggregate(outs)
    iv = agg.uncertainty["mean_all"]["file@1"]
    assert iv["n"] == 8 and iv["n_clusters"] == 2
    # two clusters, one all hits and one all misses: the interval spans [0, 1]
    assert (iv["ci_low"], iv["ci_high"]) == (0.0, 1.0)
    plain = aggregate([_hit(str(i), 1, float(i < 4)) for i in range(8)])
    assert plain.uncertainty["mean_all"]["file@1"]["n_clusters"] == 8
    assert plain.uncertainty["mean_all"]["file@1"]["ci_high"] < 1.0


def test_flat_scores_are_flat_with_integers_as_integers():
    from services.shared.scores import flat_scores

    agg = aggregate([_hit("1", 1, 1.0, "a"), _hit("1", 2, 0.0, "a"), _hit("2", 1, 1.0, "b")])
    flat = flat_scores(agg.to_dict())
    assert all(not isinstance(v, dict | list) for v in flat.values())
    for key in ("n_tasks", "n_attempts", "n_scored", "n_completed", "n_failed_infra", "trials"):
        assert type(flat[key]) is int, key
    assert (flat["n_tasks"], flat["n_attempts"], flat["trials"]) == (2, 3, 2)
    assert flat["file_at_1"] == pytest.approx(0.75)
    assert flat["file_at_1_ci_low"] <= 0.75 <= flat["file_at_1_ci_high"]
    assert flat["file_at_1_pass_at_2"] == 1.0 and flat["file_at_1_pass_hat_2"] == 0.0
    assert flat["ci_resamples"] == 2000 and flat["n_clusters"] == 2
    assert "file_at_1_floor_crash_frame" in flat


def test_the_same_task_run_twice_as_trial_one_stays_two_units():
    # single tasks of two batch runs (both trial 1) are not trials of one task
    agg = aggregate([_hit("1", 1, 1.0), _hit("1", 1, 0.0), _hit("2", 1, 1.0)])
    assert (agg.n_tasks, agg.n_attempts, agg.mean_all.n) == (3, 3, 3)
    assert agg.trials["k"] == 1
    # while distinct trial indices of one reference form one unit
    agg = aggregate([_hit("1", 1, 1.0), _hit("1", 2, 0.0), _hit("1", 1, 1.0)])
    assert (agg.n_tasks, agg.mean_all.n) == (2, 2)
