"""``POST /runs``: a named run whose client starts its tasks itself (``arena run``), over HTTP.

The operator's only; every task is checked before anything is recorded (each unknown one named);
only a run it opened takes tasks (``POST /tasks``'s ``run_id``); a resumed run is the same
record; its end records the aggregate and answers no results (the disclosure rule applies at
``GET /assessments/{id}``)."""

from __future__ import annotations

import pytest

from tests.integration.helpers import OPERATOR
from tests.support import web

pytestmark = pytest.mark.docker


def test_a_run_is_opened_checked_joined_resumed_and_ended(start_green):
    url = start_green().url
    body = {"name": "nightly", "task_ids": ["arvo:900001", "arvo:900002"], "trials": 2}
    assert web.post(f"{url}/runs", json=body).status_code == 401

    unknown = {**body, "task_ids": ["arvo:900001", "arvo:31337", "arvo:31338"]}
    r = web.post(f"{url}/runs", json=unknown, headers=OPERATOR)
    assert r.status_code == 404, r.text
    assert [u["task"] for u in r.json()["unknown"]] == ["arvo:31337", "arvo:31338"]
    assert web.get(f"{url}/ui", headers=OPERATOR).text.count("nightly") == 0  # nothing recorded

    bad = web.post(f"{url}/runs", json={**body, "name": "a\x1bb"}, headers=OPERATOR)
    assert bad.status_code == 422, bad.text  # a control character in the name

    opened = web.post(f"{url}/runs", json=body, headers=OPERATOR)
    assert opened.status_code == 201, opened.text
    run_id = opened.json()["id"]
    record = web.get(f"{url}/assessments/{run_id}", headers=OPERATOR).json()
    assert record["request"]["name"] == "nightly" and record["status"] == "running"

    assessment = web.post(
        f"{url}/assessments", json={"task_ids": ["arvo:900001"]}, headers=OPERATOR
    ).json()["id"]  # an assessment green runs itself takes no task from a client
    for other, code in ((assessment, 404), ("not-a-uuid", 422)):
        r = web.post(
            f"{url}/tasks", json={"task": "arvo:900001", "run_id": other}, headers=OPERATOR
        )
        assert r.status_code == code, r.text

    ended = web.post(f"{url}/runs/{run_id}/end", json={"interrupted": True}, headers=OPERATOR)
    assert ended.json() == {"id": run_id, "status": "cancelled"}
    again = web.post(f"{url}/runs", json={**body, "resume": run_id}, headers=OPERATOR).json()
    assert again["id"] == run_id
    assert web.get(f"{url}/assessments/{run_id}", headers=OPERATOR).json()["status"] == "running"
    ended = web.post(f"{url}/runs/{run_id}/end", json={}, headers=OPERATOR).json()
    assert ended == {"id": run_id, "status": "completed"}
    record = web.get(f"{url}/assessments/{run_id}", headers=OPERATOR).json()
    assert record["status"] == "completed" and record["result"]["tasks"] == []
