"""Ids, seeded splits and the report's verification rows of the batch client, without green."""

from __future__ import annotations

import pytest

from services.arena.refs import arvo_id, canonical_id, read_refs, split_ids
from services.arena.report import render_markdown
from services.arena.results import RunResults, outcome_from_task
from services.arena.splits import sample, split_text


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


def test_ids_are_canonical_arvo_ids_from_the_one_parser():
    assert arvo_id("arvo:010055") == arvo_id(" 10055 ") == arvo_id(10055) == "10055"
    assert split_ids(["1, 2 # x\n2 arvo:3", "4"]) == ["1", "2", "arvo:3", "4"]
    for bad in ("swebench:django__django-1", "not-an-id", "../1", "", "-1"):
        with pytest.raises(ValueError, match="not an ARVO id"):
            arvo_id(bad)
    assert canonical_id("x/y") == ("x/y", canonical_id("x/y")[1])
    assert "not an ARVO id" in (canonical_id("x/y")[1] or "")


def test_report_counts_verified_tasks():
    def task(ref: str, verified: bool | None) -> dict:
        return {"id": f"t{ref}", "arvo_id": ref, "status": "completed", "verified": verified}

    results = RunResults(run="r", green="http://g")
    results.task_ids = ["1", "2", "3"]
    results.tasks = [outcome_from_task(task("1", True)), outcome_from_task(task("2", False))]
    results.tasks.append(outcome_from_task(task("3", None)))
    text = render_markdown(results, plot=None)
    assert "| verified tasks (arena tasks verify) | 1 |" in text
    assert "| not verified | 1: 2 |" in text and "| never verified | 1 |" in text
    results.tasks = [outcome_from_task(task("3", None))]
    assert "verified" not in render_markdown(results, plot=None)  # green reported none
