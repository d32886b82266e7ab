"""Ids, seeded splits and the report's verification rows of the batch client, without green."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from services.arena.app import app
from services.arena.refs import read_refs, split_refs, task_ref, task_refs
from services.arena.report import render_markdown
from services.arena.results import RunResults, outcome_from_task
from services.arena.splits import named_split, sample, split_names, split_text
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


# --- named splits ---------------------------------------------------------------------------


def test_arena_split_prints_flbench_900_in_its_published_order():
    out = CliRunner().invoke(app, ["split", "flbench-900"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert len(lines) == 900 == len(set(lines))
    assert all(
        TaskRef.parse(line).kind == "arvo" and str(TaskRef.parse(line)) == line for line in lines
    )
    # FLBench's list (faultloc-adapter's data/eval900_instance_list.json) starts and ends so
    assert lines[:2] == ["arvo:42470093", "arvo:42470094"] and lines[-1] == "arvo:438309779"
    assert lines == split_refs([named_split("flbench-900")])


def test_arena_split_lists_the_named_splits_and_refuses_another_name():
    listed = CliRunner().invoke(app, ["split"])
    assert listed.exit_code == 0 and listed.output.startswith("flbench-900\t900\tFLBench")
    assert split_names() == ["flbench-900"]
    bad = CliRunner().invoke(app, ["split", "flbench-500"])
    assert bad.exit_code == 2 and "no split named 'flbench-500' (known: flbench-900)" in bad.output
    run = CliRunner().invoke(app, ["run", "--split", "nope", "--green", "http://127.0.0.1:9"])
    assert run.exit_code == 2 and "no split named 'nope'" in run.output
