"""Which records of a run are incomplete, and why (crafted runs: no green needed); green's view
of another task never overwrites a record."""

from __future__ import annotations

from pathlib import Path

from services.arena.records import apply, gaps, gaps_markdown, incomplete
from services.arena.results import RunOutcome, RunResults

WHOLE = {"file@1": 1.0, "project": "xmlmini", "floors": {"empty": {}}, "bug_class": "uaf"}
ARVO = {
    "arvo": {"metrics": ["file@1"], "continuous": [], "fields": ["bug_class", "floors", "project"]}
}


def _outcome(ref: str, task_id: str | None, scores: dict | None, **kw) -> RunOutcome:
    return RunOutcome(
        ref=ref, task_id=task_id, status=kw.pop("status", "completed"), scores=scores, **kw
    )


def test_each_missing_field_is_listed_with_its_reason() -> None:
    results = RunResults(run="r", green="g", kinds=ARVO)
    public = {"file@1": 0.0, "project": "tgadec", "bug_class": "overflow"}
    results.tasks = [
        _outcome("arvo:1", "a", WHOLE, disclosed="all"),
        _outcome("arvo:2", "b", public, disclosed="pending", withheld=["scores.floors"]),
        _outcome("arvo:3", "c", public, disclosed="public", withheld=["scores.floors"]),
        _outcome(
            "arvo:4",
            "d",
            None,
            status="failed",
            failure_kind="infra",
            end_reason="assets",
            disclosed="all",
        ),
        _outcome("arvo:5", "e", {"file@1": 1.0}, disclosed=None),  # an older run's record
    ]
    found = {g.label: g for g in gaps(results)}
    assert set(found) == {"arvo:2", "arvo:3", "arvo:4", "arvo:5"}
    assert (
        found["arvo:2"].fields == ["floors"]
        and "another task of the same bug" in found["arvo:2"].why
    )
    assert "no operator token" in found["arvo:3"].why
    assert found["arvo:4"].fields == ["bug_class", "floors", "project"]
    assert found["arvo:4"].why == "no scores: the task ended before green scored it (assets)"
    assert "as saved" in found["arvo:5"].why
    text = "\n".join(gaps_markdown(results))
    assert "## Incomplete records" in text and "| arvo:2 | b | floors |" in text
    assert "1 record(s) were saved before green said what it withheld" in text  # arvo:5
    assert [o.label for o in results.tasks if incomplete(o)] == ["arvo:2", "arvo:3"]
    assert [o.label for o in results.tasks if incomplete(o, unknown=True)] == [
        "arvo:2",
        "arvo:3",
        "arvo:5",
    ]


def test_without_a_declaration_the_other_records_say_what_a_record_lacks() -> None:
    results = RunResults(run="r", green="g")  # an older green: no GET /kinds fields
    results.tasks = [
        _outcome("arvo:1", "a", WHOLE),
        _outcome("arvo:2", "b", {"file@1": 0.0}),
        _outcome("swebench:x", "c", {"resolved": 1.0}),  # another kind: its own fields
    ]
    assert [(g.label, g.fields) for g in gaps(results)] == [
        ("arvo:2", ["bug_class", "floors", "project"])
    ]
    results.tasks = results.tasks[1:]  # nothing says a project was due: nothing to list
    assert gaps(results) == []
    for o in results.tasks:
        o.disclosed = "all"  # and green said these were whole
    assert gaps_markdown(results) == []


def test_a_view_of_another_task_or_state_never_overwrites_the_record(tmp_path: Path) -> None:
    results = RunResults(run="r", green="g", kinds=ARVO)
    o = _outcome("arvo:2", "b", {"file@1": 0.0}, disclosed="pending", dir="tasks/b")
    results.tasks = [o]
    view = {"id": "b", "status": "completed", "scores": WHOLE, "disclosed": "all", "withheld": []}
    assert not apply(tmp_path, o, {**view, "id": "other"})
    assert not apply(tmp_path, o, {**view, "status": "failed"})
    assert o.scores == {"file@1": 0.0} and o.disclosed == "pending"
    assert apply(tmp_path, o, view)
    assert o.scores == WHOLE and (tmp_path / "tasks" / "b" / "task.json").is_file()
    assert gaps(results) == []
