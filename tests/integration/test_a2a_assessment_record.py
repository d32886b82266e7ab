"""An assessment started over A2A is one record, like a REST one: listed, readable, linked.

Also: the numbers of the ``Result`` artifact keep their type on the wire (``steps`` is ``4``,
not ``4.0``), on the 1.0 and the 0.3 path alike.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from fixtures.catalog import get_task
from tests.integration.helpers import OPERATOR, rpc, text_message
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


def _script() -> Script:
    t = get_task(900004)
    loc = {"file": t.fix_file, "function": t.fix_function, "line_start": 1, "line_end": 3}
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


def _assert_ints(data: dict[str, Any]) -> None:
    outcome = data["tasks"][0]
    for key in ("steps", "tokens_in", "tokens_out"):
        assert type(outcome[key]) is int, (key, outcome[key])
    assert outcome["steps"] >= 2
    scores = outcome["scores"]
    assert type(scores["n_locations"]) is int, scores["n_locations"]
    loc = scores["locations"][0]
    assert (type(loc["rank"]), type(loc["line_start"])) == (int, int), loc
    assert type(data["aggregate"]["n_tasks"]) is int, data["aggregate"]
    assert isinstance(scores["file@1"], float)  # a score stays a number with a fraction


def test_task_id_message_makes_one_assessment_record(start_green, scripted_purple):
    purple_url, _ = scripted_purple(_script())
    green = start_green(purple_url=purple_url)
    params = {"message": text_message("Task ID: arvo:900004"), "configuration": {"blocking": True}}
    r = rpc(green.url, "message/send", params, headers=OPERATOR)
    body = json.loads(r.text)  # the wire's own types: 4 stays an int, 4.0 a float
    task = body["result"]
    assert task["status"]["state"] == "completed", body
    _assert_ints(_result_data(task))

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
    _assert_ints(_result_data(json.loads(got.text)["result"]))


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
