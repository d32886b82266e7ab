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
    assert (t["k"], t["n"], t["n_fewer"]) == (2, 1, 1)  # task 2 has one non-infra attempt
    # pass@k over the one task with two attempts, for every k
    assert t["file@1"]["pass@1"] == pytest.approx(0.5) and t["file@1"]["n"] == 1
    assert t["file@1"]["pass@2"] == 1.0 and t["file@1"]["n@2"] == t["file@1"]["n@1"] == 1
    assert t["file@1"]["pass^2"] == 0.0
    assert t["file@1"]["consistency"] == 0.0 and t["file@1"]["n_consistency"] == 1
    u = agg.uncertainty
    assert u["level"] == 0.95 and set(u["methods"]) == {"korn-graubard"}
    assert u["mean_all"]["file@1"]["mean"] == pytest.approx(agg.mean_all["file@1"], abs=1e-6)
    assert u["mean_all"]["file@1"]["n"] == 2
    assert u["mean_all"]["file@1"]["method"] == "korn-graubard"  # trial means: not 0/1


def test_tasks_of_one_project_form_one_cluster():
    outs = [_hit(str(i), 1, float(i < 4), project="a" if i < 4 else "b") for i in range(8)]
    agg = aggregate(outs)
    iv = agg.uncertainty["mean_all"]["file@1"]
    assert iv["n"] == 8 and iv["n_clusters"] == 2 and iv["method"] == "korn-graubard"
    # two projects, one all hits and one all misses: 8 tasks say little more than 2 would
    assert iv["ci_low"] < 0.01 and iv["ci_high"] > 0.99
    plain = aggregate([_hit(str(i), 1, float(i < 4)) for i in range(8)])
    assert plain.uncertainty["mean_all"]["file@1"]["n_clusters"] == 8
    assert plain.uncertainty["mean_all"]["file@1"]["method"] == "clopper-pearson"
    assert plain.uncertainty["mean_all"]["file@1"]["ci_high"] < 0.9


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
    assert flat["n_pass_k"] == 1 and flat["n_mean_all"] == 2 and flat["n_clusters"] == 2
    assert flat["file_at_1_ci_method"] == "korn-graubard" and flat["ci_level"] == 0.95
    assert "file_at_1_floor_crash_frame" in flat


def test_the_same_task_run_twice_as_trial_one_stays_two_units():
    # single tasks of two batch runs (both trial 1) are not trials of one task
    agg = aggregate([_hit("1", 1, 1.0), _hit("1", 1, 0.0), _hit("2", 1, 1.0)])
    assert (agg.n_tasks, agg.n_attempts, agg.mean_all.n) == (3, 3, 3)
    assert agg.trials["k"] == 1
    # while distinct trial indices of one reference form one unit
    agg = aggregate([_hit("1", 1, 1.0), _hit("1", 2, 0.0), _hit("1", 1, 1.0)])
    assert (agg.n_tasks, agg.mean_all.n) == (2, 2)


def test_crafted_runs_that_read_wrong_before_now_read_right():
    """One task, all hits, one project: never ``[x, x]``; a mean over 0 tasks is null."""
    one = aggregate([_hit("1", 1, 1.0, "p")]).uncertainty["mean_all"]["file@1"]
    assert (one["mean"], one["ci_low"], one["no_interval"]) == (1.0, None, "one task")
    all_hits = aggregate([_hit(str(i), 1, 1.0, f"p{i}") for i in range(12)])
    iv = all_hits.uncertainty["mean_all"]["file@1"]
    assert iv["ci_low"] == pytest.approx(0.025 ** (1 / 12), abs=1e-6) and iv["ci_high"] == 1.0
    assert iv["se"] == 0.0 and iv["method"] == "clopper-pearson"
    project = aggregate([_hit(str(i), 1, float(i % 2), "same") for i in range(6)])
    iv = project.uncertainty["mean_all"]["file@1"]
    assert (iv["mean"], iv["ci_low"], iv["no_interval"]) == (0.5, None, "one project")
    infra = TaskOutcome(ref_id="9", trial=1, status="failed", failure_kind="infra")
    nothing = aggregate([infra], ["file@1"])
    assert nothing.mean_all.n == 1 and nothing.mean_non_infra.n == 0
    assert nothing.mean_non_infra["file@1"] is None
    assert nothing.to_dict()["mean_non_infra"]["file@1"] is None
    iv = nothing.uncertainty["mean_non_infra"]["file@1"]
    assert (iv["mean"], iv["ci_low"], iv["no_interval"]) == (None, None, "no task")


def test_unequal_trials_give_monotone_pass_at_k_over_one_task_set():
    """The issue's crafted run: pass^2 = 0.667, pass^3 = 1.000 (pass^3 over 1 of 3 tasks)."""
    outs = [_hit("a", t, 1.0) for t in (1, 2, 3)]
    outs += [_hit("b", 1, 1.0), _hit("b", 2, 0.0), _hit("c", 1, 1.0), _hit("c", 2, 1.0)]
    t = aggregate(outs).trials
    assert (t["k"], t["n"], t["n_fewer"]) == (3, 1, 2)
    row = t["file@1"]
    assert [row[f"pass^{k}"] for k in (1, 2, 3)] == [1.0, 1.0, 1.0]  # task a alone
    assert all(row[f"n@{k}"] == 1 for k in (1, 2, 3))


def test_a_run_of_varying_trials_gets_a_narrower_interval_than_one_trial():
    # 12 tasks of 3 trials, hit 3, 2 or 1 times (mean 2/3), against 12 tasks of one trial with
    # the same mean (8 hits): the aggregate passes each task's trials to the interval
    hits = [3] * 4 + [2] * 4 + [1] * 4
    three = [_hit(str(i), t + 1, float(t < h)) for i, h in enumerate(hits) for t in range(3)]
    one = [_hit(str(i), 1, float(i < 8)) for i in range(12)]
    iv3 = aggregate(three).uncertainty["mean_all"]["file@1"]
    iv1 = aggregate(one).uncertainty["mean_all"]["file@1"]
    assert iv3["mean"] == pytest.approx(iv1["mean"], abs=1e-6)
    assert iv3["ci_high"] - iv3["ci_low"] < iv1["ci_high"] - iv1["ci_low"]
