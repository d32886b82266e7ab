"""The run aggregate and the outcome record are kind-neutral: metrics are the kind's (or those
found in the records), references are ``kind:id``, and ``arvo_id`` is only a read-back alias."""

from __future__ import annotations

import pytest

from services.shared.outcome import TaskOutcome
from services.shared.scores import (
    aggregate,
    aggregate_metrics,
    aggregate_records,
    field_name,
    flat_scores,
    headline,
    hit_or_miss,
    metric_names,
)

ARVO = ["file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"]


def test_metric_names_are_the_real_numbers_of_a_score_in_order() -> None:
    arvo = {**dict.fromkeys(ARVO, 0.0), "scorable": True, "submitted": False, "n_locations": 0}
    arvo |= {"project": "p", "floors": {"empty": {"iou": 0.0}}, "explanation": ["x"]}
    assert metric_names([arvo]) == ARVO  # flags are bools, counts ints, the rest not numbers
    assert metric_names([None, {"resolved": 1.0, "test_log": "ok"}, arvo]) == ["resolved", *ARVO]
    assert headline(ARVO) == ["file@1", "func@1", "line@1", "iou"]
    assert [field_name(m) for m in ("file@1", "iou", "resolved")] == [
        "file_at_1",
        "iou",
        "resolved",
    ]


def test_a_kind_of_one_metric_aggregates_like_arvo() -> None:
    rows = [
        {"ref": "swebench:a", "status": "completed", "scores": {"resolved": 1.0}},
        {"ref": "swebench:b", "status": "completed", "scores": {"resolved": 0.0}},
        {"ref": "swebench:c", "status": "failed", "failure_kind": "infra"},
        {"ref": "swebench:d", "status": "failed", "failure_kind": "agent"},
    ]
    agg = aggregate_records(rows)
    assert agg.metrics == ["resolved"] and agg.n_tasks == 4 and agg.n_scored == 2
    assert agg.mean_all["resolved"] == 0.25 and agg.mean_all.n == 4
    assert agg.mean_non_infra["resolved"] == pytest.approx(1 / 3, abs=1e-6)
    flat = flat_scores(agg.to_dict())
    assert flat["resolved"] == 0.25 and flat["resolved_non_infra"] == pytest.approx(1 / 3, 1e-5)
    assert "file_at_1" not in flat
    # a kind names its metrics: one never scored still gets its (zero) column
    named = aggregate([TaskOutcome.from_record(r) for r in rows], ["resolved", "tests_run"])
    assert named.metrics == ["resolved", "tests_run"] and named.mean_all["tests_run"] == 0.0


def test_an_aggregate_stored_before_it_named_its_metrics_still_flattens() -> None:
    old = {"n_tasks": 1, "mean_all": {"file@1": 1.0, "iou": 0.5, "n": 1}, "uncertainty": {}}
    old["uncertainty"] = {"method": "cluster bootstrap", "mean_all": {"iou": {"ci_low": 0.1}}}
    assert aggregate_metrics(old) == ["file@1", "iou"]
    assert flat_scores(old)["file_at_1"] == 1.0 and flat_scores(old)["iou"] == 0.5
    assert flat_scores(old)["iou_ci_low"] == 0.1 and flat_scores(old)["iou_ci_method"] is None


def test_hit_or_miss_is_decided_by_the_recorded_values() -> None:
    scores = [{"file@1": 1.0, "iou": 0.25}, {"file@1": 0.0, "iou": 1.0}, None]
    assert hit_or_miss(scores, "file@1") and not hit_or_miss(scores, "iou")


def test_the_outcome_reads_ref_and_the_deprecated_arvo_id() -> None:
    swe = TaskOutcome.model_validate({"ref": "swebench:django__django-1", "status": "completed"})
    assert (swe.kind, swe.ref_id, swe.ref) == ("swebench", "django__django-1", swe.ref)
    assert str(swe.task_ref) == "swebench:django__django-1"
    old = TaskOutcome.from_record({"arvo_id": "10055", "status": "failed"})
    assert old.ref == "arvo:10055" and old.failure_kind == "infra"
    again = TaskOutcome.model_validate(swe.model_dump(mode="json"))  # the alias does not win
    assert again.ref == "swebench:django__django-1" and again.arvo_id == "django__django-1"
    with pytest.raises(ValueError, match="has no reference"):
        _ = TaskOutcome(status="completed").task_ref
