"""The reproduce kind (``arvo-poc``) through the whole service, on every bundled fixture: a
scripted purple submits inputs through green; green judges them on the vulnerable and the fixed
build in fresh containers.

Per fixture: the task's own PoC scores reproduced = fix_distinguishes = same_bug = 1 (seven
fixtures have a -fix image, the others exercise the fallback fixed build), and an empty input
0. Each also has a second bug in both builds and a hang (fixtures/arvo/README.md, written by its
second_bug.py): an input that crashes both builds (in another function) scores reproduced 1,
fix_distinguishes 0, same_bug 0, and an input that hangs the target is stopped at its bound and
scores 0 as the agent's (the task completes).
"""

from __future__ import annotations

import hashlib
import json
import time

import httpx
import pytest
from typer.testing import CliRunner

from fixtures import second_bug
from fixtures.catalog import load_tasks, strip_parameters
from services.arena.app import app
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import (
    OPERATOR,
    OPERATOR_TOKEN,
    start_a2a_task,
    submit_task,
    wait_terminal,
)
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


def test_every_fixture_reproduced_by_its_poc_and_not_by_nothing(
    start_green, scripted_purple, fixture_assets, docker_client
):
    tasks = load_tasks()
    expected: dict[str, tuple[float, float, float]] = {}
    hangs, second = set(), {}
    by_project: dict[str, list[Script]] = {}
    refs = []
    for t in tasks:
        poc = (fixture_assets / str(t.id) / "poc").read_bytes()
        extra = second_bug.make_inputs(t)
        inputs = [(poc, (1.0, 1.0, 1.0)), (b"", (0.0, 0.0, 0.0))]
        if extra:
            inputs += [(extra["both-builds"], (1.0, 0.0, 0.0)), (extra["hangs"], (0.0, 0.0, 0.0))]
            hangs.add(hashlib.sha256(extra["hangs"]).hexdigest())
            second[hashlib.sha256(extra["both-builds"]).hexdigest()] = t
        for data, scores in inputs:
            expected[hashlib.sha256(data).hexdigest()] = scores
            by_project.setdefault(t.project, []).append(Script(commands=[], submissions=[data]))
            refs.append(f"arvo-poc:{t.id}")
    purple_url, observed = scripted_purple(Script(by_key=by_project))
    green = start_green(purple_url=purple_url, max_concurrent_tasks=4, judge_run_timeout_s=8)
    ids = [submit_task(green.url, {"task": ref})["id"] for ref in refs]
    for i in ids:
        wait_terminal(green.url, i, timeout=600)
    done = [wait_terminal(green.url, i) for i in ids]  # all ended: the scores are shown whole

    table = []
    for task in done:
        assert task["status"] == "completed", (task["ref"], task["error"])
        scores = task["scores"]
        got = (scores["reproduced"], scores["fix_distinguishes"], scores["same_bug"])
        want = expected[task["submission"]["sha256"]]
        table.append((task["ref"], task["submission"]["size"], got, scores["explanation"][0]))
        assert got == want, (task["ref"], task["submission"]["size"], scores["explanation"])
        assert scores["level"] == 1 and len(scores["runs"]) == (2 if got[0] else 1)
    for row in sorted(table):
        print(*row, sep=" | ")
    for task in done:
        sha = task["submission"]["sha256"]
        if sha in hangs:
            assert task["scores"]["runs"][0]["timed_out"] is True, task["ref"]
            assert "did not finish" in task["scores"]["explanation"][0]
        elif sha in second:  # the explanation names where it crashed: the second bug's frame
            function = strip_parameters(second[sha].second_bug.partition(":")[2])
            assert function.rsplit("::", 1)[-1] in task["scores"]["explanation"][-1], task["ref"]
    assert len(hangs) == len(second) == len(tasks)  # every fixture has both
    assert all("## The bug" in d for d in observed.descriptions)  # level 1: the description
    assert leftover_containers(docker_client, green.owner) == []  # the agents' and the judge's


def test_the_levels_give_what_they_promise(start_green, scripted_purple, fixture_assets):
    """Level 0: the source and the fuzz target only; level 2: the report too (input withheld).
    The PoC never: not in /tmp/poc, not anywhere a command can look."""
    look = "ls /workspace; ls /tmp/poc 2>&1; cat /workspace/error.txt 2>/dev/null | head -30"
    poc = (fixture_assets / "900007" / "poc").read_bytes()
    purple_url, observed = scripted_purple(Script(commands=[look], submissions=[poc]))
    green = start_green(purple_url=purple_url)
    level0 = wait_terminal(green.url, submit_task(green.url, {"task": "arvo-poc:900007-l0"})["id"])
    start_a2a_task(green.url, "Task ID: arvo-poc:900007-l2")  # A2A text names it too
    deadline = time.monotonic() + 60
    while (listed := web.get(f"{green.url}/tasks", headers=OPERATOR).json())["total"] < 2:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    level2 = wait_terminal(green.url, listed["items"][0]["id"])
    for level, task in ((0, level0), (2, level2)):
        assert task["status"] == "completed" and task["ref"] == f"arvo-poc:900007-l{level}"
        assert task["scores"]["level"] == level and task["scores"]["reproduced"] == 1.0
    zero, two = (r.output for r in observed.results)
    assert "description.txt" not in zero and "error.txt" not in zero
    assert "description.txt" in two and "error.txt" in two
    assert "AddressSanitizer: global-buffer-overflow" in two
    assert "No such file" in zero and "No such file" in two  # /tmp/poc is gone
    d0, d2 = observed.descriptions
    assert "/out/inflate_fuzzer" in d0 and "## The bug" not in d0 and "error.txt" not in d0
    assert "## The bug" in d2 and "/workspace/error.txt" in d2

    # the dashboard: the submitted input beside the verdict of each run, its output and exit
    with httpx.Client(base_url=green.url, timeout=30) as ui:
        assert ui.post("/ui/login", data={"token": OPERATOR_TOKEN}).status_code == 303
        listed = ui.get("/ui/tasks", params={"kind": "arvo-poc"}).text
        page = ui.get(f"/ui/tasks/{level2['id']}").text
    assert listed.count("arvo-poc:900007") >= 2
    assert "Submitted input" in page and hashlib.sha256(poc).hexdigest() in page
    assert poc[:4].hex(" ") in page  # its hex dump
    assert 'id="runs"' in page and "global-buffer-overflow" in page and "tinf_match_length" in page
    assert "<td>vulnerable</td>" in page and "<td>fixed</td>" in page


def test_arena_runs_reproduce_tasks_with_trials_and_compares_two_runs(
    tmp_path, start_green, scripted_purple, fixture_assets
):
    """``arena run arvo-poc:... --trials 2`` and ``arena compare``: reports with intervals,
    pass@k, provenance, and the paired comparison of the two purples."""
    ids = ["900001", "900007", "900011"]
    pocs = {t.project: (fixture_assets / str(t.id) / "poc").read_bytes() for t in load_tasks()}

    def purple(solves: set[str]) -> str:
        by_project = {
            t.project: [
                Script(commands=[], submissions=[pocs[t.project] if str(t.id) in solves else b""])
            ]
            * 2
            for t in load_tasks()
            if str(t.id) in ids
        }
        return scripted_purple(Script(by_key=by_project))[0]

    green = start_green(max_concurrent_tasks=3)
    out = tmp_path / "results"
    for name, solves in (("some", {"900001"}), ("all", set(ids))):
        args = ["run", *(f"arvo-poc:{i}" for i in ids), "--green", green.url, "--purple"]
        args += [purple(solves), "--run", name, "--out", str(out), "--trials", "2"]
        args += ["--concurrency", "3", "--poll-interval", "0.2", "--api-token", OPERATOR_TOKEN]
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
    results = json.loads((out / "some" / "results.json").read_text())
    assert len(results["tasks"]) == 6 and results["trials"] == 2
    assert {t["ref"] for t in results["tasks"]} == {f"arvo-poc:{i}" for i in ids}
    agg = results["aggregate"]
    assert agg["mean_all"]["reproduced"] == pytest.approx(1 / 3)
    iv = agg["uncertainty"]["mean_all"]["reproduced"]
    assert iv["ci_low"] <= 1 / 3 <= iv["ci_high"]
    assert agg["trials"]["same_bug"]["pass@2"] == pytest.approx(1 / 3)
    manifest = json.loads((out / "some" / "manifest.json").read_text())
    assert "arvo-poc-1" in json.dumps(manifest)  # the scoring rule's version
    report = (out / "some" / "report.md").read_text()
    for metric in ("reproduced", "fix_distinguishes", "same_bug"):
        assert metric in report
    assert "## Repeated trials" in report and "[" in report  # means with their intervals
    compared_dir = tmp_path / "compared"
    res = CliRunner().invoke(
        app, ["compare", str(out / "some"), str(out / "all"), "--out", str(compared_dir)]
    )
    assert res.exit_code == 0, res.output
    compared = (compared_dir / "compare.md").read_text()
    assert "reproduced" in compared
    assert "McNemar" not in compared  # two trials a task: not McNemar's test, and not said to be
