"""An assessment started over A2A is one record, like a REST one: listed, readable, linked.

Also: the numbers of the ``Result`` artifact keep their type on the wire (``steps`` is ``4``,
not ``4.0``), on the 1.0 and the 0.3 path alike.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from fixtures.catalog import get_task
from services.green.kinds.arvo.judge import Judge
from tests.integration.helpers import OPERATOR, rpc, text_message
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


def _script(assets: Path | None = None) -> Script:
    """Rank 1 on the fix's file and function; with ``assets``, on its lines too (so the score's
    regions carry ``line_matched_by: [1]``, a count in a list)."""
    t = get_task(900004)
    loc = {"file": t.fix_file, "function": t.fix_function, "line_start": 1, "line_end": 3}
    if assets is not None:
        task = assets / "900004"
        fix = Judge().prepare(task / "patch.diff", task / "repo-vul.tar.gz").ground_truth
        loc |= {"line_start": fix.regions[0].start, "line_end": fix.regions[0].end}
    return Script(commands=["ls", "pwd"], submissions=[{"locations": [loc]}])


def _record(green_url: str, aid: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        r = web.get(f"{green_url}/assessments/{aid}", headers=OPERATOR, timeout=10)
        assert r.status_code == 200, r.text
        rec = r.json()
        if rec["status"] != "running" or time.monotonic() > deadline:
            return rec
        time.sleep(0.2)


def _result_data(task: dict[str, Any]) -> dict[str, Any]:
    """The data part of the task's Result artifact, as the wire carried it."""
    (artifact,) = [a for a in task["artifacts"] if a.get("name") == "Result"]
    return next(p["data"] for p in artifact["parts"] if "data" in p)


def _same_ints(rest: Any, a2a: Any, where: str = "") -> int:
    """Every integer of REST's record is an integer, equal, at the same place in the A2A data
    (dicts by key, lists item by item, at any depth); how many were compared."""
    if isinstance(rest, int) and not isinstance(rest, bool):
        assert type(a2a) is int and a2a == rest, (where, rest, a2a)
        return 1
    if isinstance(rest, dict):
        assert isinstance(a2a, dict), (where, a2a)
        return sum(_same_ints(v, a2a[k], f"{where}.{k}") for k, v in rest.items() if k in a2a)
    if isinstance(rest, list):
        assert isinstance(a2a, list) and len(a2a) == len(rest), (where, a2a)
        return sum(
            _same_ints(v, w, f"{where}[{i}]")
            for i, (v, w) in enumerate(zip(rest, a2a, strict=True))
        )
    if isinstance(rest, float):
        assert type(a2a) is float, (where, a2a)  # a score stays a number with a fraction
    return 0


def _assert_ints(green_url: str, data: dict[str, Any]) -> None:
    """The Result artifact's task against REST's record of it, field by field, lists included
    (``scores.regions[].line_matched_by[]`` arrived as ``[2.0]`` before)."""
    outcome = data["tasks"][0]
    rest = web.get(f"{green_url}/tasks/{outcome['task_id']}", headers=OPERATOR).json()
    assert outcome["steps"] >= 2
    assert any(r.get("line_matched_by") for r in rest["scores"]["regions"]), rest["scores"]
    assert _same_ints(rest, outcome) >= 15
    assert type(data["aggregate"]["n_tasks"]) is int, data["aggregate"]


def test_task_id_message_makes_one_assessment_record(start_green, scripted_purple, fixture_assets):
    purple_url, _ = scripted_purple(_script(fixture_assets))
    green = start_green(purple_url=purple_url)
    params = {"message": text_message("Task ID: arvo:900004"), "configuration": {"blocking": True}}
    r = rpc(green.url, "message/send", params, headers=OPERATOR)
    body = json.loads(r.text)  # the wire's own types: 4 stays an int, 4.0 a float
    task = body["result"]
    assert task["status"]["state"] == "completed", body
    _assert_ints(green.url, _result_data(task))

    # The green task it ran carries the assessment id; the record exists and is finished.
    listed = web.get(f"{green.url}/tasks", headers=OPERATOR, timeout=10).json()
    (row,) = listed["items"]
    aid = row["assessment_id"]
    assert aid, row
    rec = _record(green.url, aid)
    assert rec["status"] == "completed", rec
    assert rec["purple_url"] == purple_url
    assert rec["request"]["task_ids"] == ["arvo:900004"]
    assert rec["result"]["tasks"][0]["task_id"] == row["id"]
    # Listed on the runs page (the dashboard's front page), and its own page answers.
    page = web.get(f"{green.url}/ui", headers=OPERATOR, timeout=10)
    assert page.status_code == 200 and aid[:8] in page.text
    page = web.get(f"{green.url}/ui/runs/{aid}", headers=OPERATOR, timeout=10)
    assert page.status_code == 200, page.text[:500]

    # The same artifact read back with the 1.0 method keeps its integers too.
    got = rpc(green.url, "GetTask", {"id": task["id"]}, headers=OPERATOR, version="1.0")
    _assert_ints(green.url, _result_data(json.loads(got.text)["result"]))


def test_agentbeats_request_makes_one_assessment_record(start_green, scripted_purple):
    purple_url, _ = scripted_purple(_script())
    green = start_green()
    request = {"participants": {"agent": purple_url}, "config": {"task_ids": ["arvo:900004"]}}
    params = {"message": text_message(json.dumps(request)), "configuration": {"blocking": True}}
    body = rpc(green.url, "message/send", params, headers=OPERATOR).json()
    assert body["result"]["status"]["state"] == "completed", body
    (row,) = web.get(f"{green.url}/tasks", headers=OPERATOR, timeout=10).json()["items"]
    rec = _record(green.url, row["assessment_id"])
    assert (rec["status"], rec["purple_url"]) == ("completed", purple_url)
