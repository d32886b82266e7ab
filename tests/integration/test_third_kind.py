"""A third task kind plugs in with one registration line: the example of docs/kinds.md
(tests/green/kinds/needle/kind.py) runs through the real green, a scripted purple and a real
container, and is judged by its own rule; its optional dataset tools (list, prefetch, verify)
reach green's ``/datasets/*`` routes and ``verified_only``, and its report the dashboard,
through the kind protocols alone."""

from __future__ import annotations

import httpx
import pytest

from services.green.kinds.registry import KINDS, parse_ref
from tests.green.kinds.needle.kind import NeedleKind, needle_line
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


@pytest.fixture
def needle_registered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(KINDS, NeedleKind.name, NeedleKind)  # the one registration line


def test_the_reference_parser_knows_the_new_kind(needle_registered):
    assert str(parse_ref("needle:0042")) == "needle:42"
    with pytest.raises(ValueError, match="is a number"):
        parse_ref("needle:abc")


@pytest.mark.parametrize(("answer", "found"), [(needle_line("42"), 1.0), (1, 0.0)])
def test_a_needle_task_runs_and_is_judged_by_its_kind(
    needle_registered, start_green, scripted_purple, answer, found
):
    purple_url, seen = scripted_purple(
        Script(commands=["grep -n NEEDLE /workspace/haystack.txt"], submissions=[{"line": answer}])
    )
    green = start_green(purple_url=purple_url)

    task = submit_task(green.url, {"task": "needle:42"})
    assert task["kind"] == "needle" and task["ref"] == "needle:42"
    done = wait_terminal(green.url, task["id"])

    assert done["status"] == "completed", done
    assert done["scores"] == {"found": found, "submitted": True}
    assert done["ground_truth"] == {"line": needle_line("42")}
    assert seen.results[0].output.startswith(f"{needle_line('42')}:NEEDLE")
    [description] = seen.descriptions
    assert "haystack.txt" in description and f"line {needle_line('42')}" not in description
    assert "ground_truth" not in description and f'"line": {needle_line("42")}' not in description
    listed = web.get(f"{green.url}/tasks", params={"ref": "needle:042"}, headers=OPERATOR)
    assert [t["id"] for t in listed.json()["items"]] == [task["id"]]


def test_a_third_kind_gets_datasets_and_verify_through_the_protocol(
    needle_registered, start_green, scripted_purple
):
    purple_url, _ = scripted_purple(Script(commands=[], submissions=[{"line": needle_line("42")}]))
    green = start_green(purple_url=purple_url)

    def post(path: str, body: dict) -> httpx.Response:
        return web.post(f"{green.url}{path}", json=body, headers=OPERATOR, timeout=60)

    def get(path: str, **params) -> httpx.Response:
        return web.get(f"{green.url}{path}", params=params, headers=OPERATOR, timeout=30)

    listed = get("/datasets/ids", kind="needle").json()
    assert listed["kind"] == "needle" and listed["total"] == 1000
    assert listed["ids"][:3] == ["0", "1", "2"] and listed["ids"][-1] == "999"
    dry = post("/datasets/prefetch", {"task": "needle:7", "dry_run": True})
    assert dry.status_code == 200 and dry.json()["download_bytes"] == 0, dry.text
    unknown = post("/datasets/prefetch", {"task": "needle:5000"})
    assert unknown.status_code == 404 and "1000 needle tasks" in unknown.text

    # verification runs the kind's own check in a real container; green stores it per kind
    good = post("/datasets/verify", {"task": "needle:042"}).json()
    assert (good["kind"], good["ref"], good["verified"]) == ("needle", "42", True), good
    assert good["steps"][0]["detail"] == f"the needle is on line {needle_line('42')}"
    broken = post("/datasets/verify", {"task": "needle:999"}).json()
    assert broken["verified"] is False
    assert (
        broken["reason"] == "needle: the ground truth says line 1000, the haystack has it on none"
    )
    rows = get("/datasets/verifications", task=["needle:42", "needle:999", "needle:1"]).json()
    assert {(r["kind"], r["ref"], r["verified"]) for r in rows} == {
        ("needle", "42", True),
        ("needle", "999", False),
    }
    # what the kind does not offer (an image budget), or a kind this green does not serve: a
    # 404 with a sentence naming the kind, never a 500
    no_budget = get("/datasets/images", kind="needle")
    assert no_budget.status_code == 404, no_budget.text
    assert (
        no_budget.json()["detail"] == "the task kind 'needle' keeps no task images under a budget"
    )
    not_served = get("/datasets/ids", kind="swebench")
    assert not_served.status_code == 404 and "'swebench'" in not_served.json()["detail"]

    # the verified flag and verified_only work for the new kind like for ARVO
    body = {"task_ids": ["needle:42", "needle:999"], "verified_only": True}
    started = post("/assessments", body)
    assert started.status_code == 202, started.text
    assert started.json()["left_out"] == ["needle:999"]
    [task_id] = started.json()["task_ids"]
    done = wait_terminal(green.url, task_id)
    assert done["ref"] == "needle:42" and done["verified"] is True
    assert done["scores"] == {"found": 1.0, "submitted": True}

    # the dashboard shows the kind's report and groups the task by the kind's own class
    page = get(f"/ui/tasks/{task_id}").text
    assert '<h2 id="report-h">Haystack</h2>' in page and "haystack.txt: one line is NEEDLE" in page
    assert '<span class="pill">top half</span>' in page
    assert task_id in get("/ui/tasks", bug_class="top half").text
    assert task_id not in get("/ui/tasks", bug_class="bottom half").text
