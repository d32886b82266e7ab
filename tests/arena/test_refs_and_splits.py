"""Ids, seeded splits and the report's verification rows of the batch client, without green."""

from __future__ import annotations

import pytest

from services.arena.refs import read_refs, split_refs, task_ref, task_refs
from services.arena.report import render_markdown
from services.arena.results import RunResults, outcome_from_task
from services.arena.splits import sample, split_text
from services.shared.task_ref import TaskRef


def test_sample_is_seeded_and_independent_of_the_listing_order():
    population = [str(i) for i in range(1000, 1400)]
    a = sample(population, 25, seed=7)
    assert a == sample(list(reversed(population)) + population[:5], 25, seed=7)
    assert a != sample(population, 25, seed=8)
    assert len(set(a)) == 25 and set(a) <= set(population)
    # Fixed figures: the same selection on every machine and Python version of the project.
    assert sample(["1", "2", "3", "10", "20"], 2, seed=0) == sample(
        ["20", "10", "3", "2", "1"], 2, 0
    )


def test_sample_refuses_impossible_sizes():
    with pytest.raises(ValueError, match="more than the 2"):
        sample(["1", "2"], 3, seed=0)
    with pytest.raises(ValueError, match="at least 1"):
        sample(["1"], 0, seed=0)


def test_split_file_round_trip():
    text = split_text(["10055", "900001"], "split of run r")
    assert read_refs(text) == ["10055", "900001"]
    assert read_refs("1, 2 # comment\n3\n") == ["1", "2", "3"]


def test_refs_are_read_by_the_one_parser_and_any_kind_passes():
    assert (
        task_ref("arvo:010055")
        == task_ref(" 10055 ")
        == task_ref(10055)
        == TaskRef("arvo", "10055")
    )
    assert str(task_ref("swebench:django__django-11099")) == "swebench:django__django-11099"
    assert split_refs(["1, 2 # x\n2 arvo:3", "4"]) == ["1", "2", "arvo:3", "4"]
    refs, bad = task_refs(["1", "arvo:01", "needle:a.b", "../1", "", "-1"])
    assert refs == [TaskRef("arvo", "1"), TaskRef("needle", "a.b")]
    assert len(bad) == 3 and all(b.startswith("not a task reference") for b in bad)


def test_a_sample_of_refs_selects_what_the_bare_ids_selected():
    """The seeded draw sorts references as it sorted ARVO ids (numbers in numeric order), so a
    split drawn before references were written out draws the same tasks now."""
    ids = [str(i) for i in range(1000, 1400)]
    assert sample([f"arvo:{i}" for i in ids], 25, seed=7) == [
        f"arvo:{i}" for i in sample(ids, 25, 7)
    ]


def test_report_counts_verified_tasks():
    def task(ref: str, verified: bool | None) -> dict:
        return {"id": f"t{ref}", "ref": f"arvo:{ref}", "status": "completed", "verified": verified}

    results = RunResults(run="r", green="http://g")
    results.task_ids = ["arvo:1", "arvo:2", "arvo:3"]
    results.tasks = [outcome_from_task(task("1", True)), outcome_from_task(task("2", False))]
    results.tasks.append(outcome_from_task(task("3", None)))
    text = render_markdown(results, plot=None)
    assert "| verified tasks (arena tasks verify) | 1 |" in text
    assert "| not verified | 1: arvo:2 |" in text and "| never verified | 1 |" in text
    results.tasks = [outcome_from_task(task("3", None))]
    assert "verified" not in render_markdown(results, plot=None)  # green reported none
