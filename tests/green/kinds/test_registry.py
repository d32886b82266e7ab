"""The kind registry: one parser for task references, checked by each kind; the kinds a green
serves follow its settings; A2A text names tasks of any registered kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.green.a2a.requests import StartTask, classify
from services.green.config import GreenSettings
from services.green.kinds.arvo import ArvoKind
from services.green.kinds.registry import KINDS, build_kinds, parse_ref
from services.green.kinds.swebench import SweBenchKind
from services.green.store.models import TaskStatus
from services.shared.a2a import Payload
from services.shared.outcome import TaskOutcome
from services.shared.task_ref import TaskRef


def test_every_registered_kind_is_named_by_its_prefix():
    assert set(KINDS) == {"arvo", "arvo-poc", "arvo-fix", "swebench"}
    assert all(cls.name == name for name, cls in KINDS.items())


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (10055, "arvo:10055"),
        ("arvo:010055", "arvo:10055"),
        ("swebench:django__django-11099", "swebench:django__django-11099"),
    ],
)
def test_parse_ref_canonical(value, expected):
    assert parse_ref(value) == TaskRef.parse(expected)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("arvo:abc", "not an ARVO id"),  # the kind's own check
        ("nokind:1", "unknown task kind 'nokind'"),
        ("../../etc/passwd", "not a task reference"),
    ],
)
def test_parse_ref_rejects_with_a_sentence(value, why):
    with pytest.raises(ValueError, match=why):
        parse_ref(value)


def test_build_kinds_follows_the_settings(tmp_path: Path):
    base = dict(asset_source=str(tmp_path), asset_cache_dir=tmp_path / "cache")
    arvo = build_kinds(GreenSettings(**base), sandboxes=None)  # type: ignore[arg-type]
    assert list(arvo) == ["arvo", "arvo-poc", "arvo-fix"]  # the same bugs, three questions
    assert isinstance(arvo["arvo"], ArvoKind)
    every = build_kinds(
        GreenSettings(**base, swebench_instances=str(tmp_path / "i.jsonl")),
        sandboxes=None,  # type: ignore[arg-type]
    )
    assert set(every) == {"arvo", "arvo-poc", "arvo-fix", "swebench"}


def test_a2a_text_names_tasks_of_registered_kinds_only():
    verdict = classify(Payload(text="Task ID: arvo:010055 and swebench:a__b-1; other:7"))
    assert isinstance(verdict, StartTask)
    assert verdict.task_ids == [TaskRef("arvo", "10055"), TaskRef("swebench", "a__b-1")]


def test_kind_aggregates_read_task_outcomes():
    outcomes = [
        TaskOutcome(
            kind="swebench", ref_id="a", status=TaskStatus.completed, scores={"resolved": 1.0}
        ),
        TaskOutcome(kind="swebench", ref_id="b", status=TaskStatus.failed, failure_kind="infra"),
    ]
    agg = SweBenchKind("unused.jsonl", provider=None).aggregate(outcomes)  # type: ignore[arg-type]
    assert agg["resolved"] == 1 and agg["mean_all"]["resolved"] == 0.5
    assert agg["mean_non_infra"] == {"n": 1, "resolved": 1.0}
    only_infra = SweBenchKind("unused.jsonl", provider=None).aggregate(outcomes[1:])  # type: ignore[arg-type]
    assert only_infra["mean_non_infra"]["n"] == 0
    assert only_infra["mean_non_infra"]["resolved"] is None  # no mean, never 0
    assert outcomes[0].model_dump(mode="json")["ref"] == "swebench:a"
    with pytest.raises(ValueError, match="has not ended"):
        ArvoKind(assets=None, image_template="").aggregate(  # type: ignore[arg-type]
            [TaskOutcome(status=TaskStatus.running)]
        )


def test_swebench_aggregate_is_over_tasks_with_intervals_as_every_kind():
    """A SWE-bench run's means are over tasks (a task's trials averaged first), with the same
    95% intervals as every other kind's: it had its own sum over attempts, with none."""
    ok = {"resolved": 1.0, "submitted": True}
    no = {"resolved": 0.0, "submitted": True}
    outcomes = [
        TaskOutcome(kind="swebench", ref_id=ref, trial=trial, status=TaskStatus.completed, scores=s)
        for ref, trial, s in [("a", 1, ok), ("a", 2, ok), ("b", 1, no), ("b", 2, ok), ("c", 1, no)]
    ]
    agg = SweBenchKind("unused.jsonl", provider=None).aggregate(outcomes)  # type: ignore[arg-type]
    assert agg["n_tasks"] == 3 and agg["n_attempts"] == 5
    assert agg["mean_all"]["n"] == 3 and agg["mean_all"]["resolved"] == pytest.approx(0.5)
    interval = agg["uncertainty"]["mean_all"]["resolved"]
    assert interval["method"] and 0 <= interval["ci_low"] < 0.5 < interval["ci_high"] <= 1
    assert agg["trials"]["resolved"]["n"] == 2  # pass@2 over the two tasks with two attempts
