"""``POST /runs``: a named run whose client starts its tasks itself (``arena run``), over HTTP.

The operator's only (on an open plane, a run is its opener's); every task is checked before anything is recorded (each unknown one named);
only a run it opened takes tasks (``POST /tasks``'s ``run_id``); a resumed run is the same
record; its end records the aggregate and answers no results (the disclosure rule applies at
``GET /assessments/{id}``)."""

from __future__ import annotations

import httpx
import pytest

from services.arena.client import GreenAuth, GreenClient
from tests.integration.helpers import OPERATOR, submit_task, wait_status, wait_terminal
from tests.support import web
from tests.support.scripted_purple import Script

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


def test_8_nobody_but_its_opener_or_the_operator_changes_a_run(start_green, scripted_purple):
    """The plane is open (GREEN_OPEN_OPERATOR_PLANE=true). An anonymous caller takes the
    operator's run by its id (on the dashboard): adds a task to it, renames it and changes its
    tasks and trials by resuming it, ends it early, cancels its task. All refused (before, all
    done; the dashboard's cancel too). Its own run, opened without a credential, answers with a key: with it, and only with
    it (or the operator's), the run is changed."""
    slow, _ = scripted_purple(Script(commands=["sleep 1"] * 30, submit=False))
    url = start_green(purple_url=slow, open_operator_plane=True).url
    body = {"name": "nightly", "task_ids": ["arvo:900001"]}
    run_id = web.post(f"{url}/runs", json=body, headers=OPERATOR).json()["id"]
    task = submit_task(url, {"task": "arvo:900001", "run_id": run_id})
    wait_status(url, task["id"], "running")

    joined = web.post(f"{url}/tasks", json={"task": "arvo:900002", "run_id": run_id})
    takeover = {"name": "pwned", "task_ids": ["arvo:900003"], "trials": 9, "resume": run_id}
    resumed = web.post(f"{url}/runs", json=takeover)
    ended = web.post(f"{url}/runs/{run_id}/end", json={})
    cancelled = web.post(f"{url}/tasks/{task['id']}/cancel")
    for r in (joined, resumed, ended, cancelled):
        assert r.status_code == 403 and "opened it" in r.json()["detail"], r.text
    from_page = web.post(f"{url}/ui/tasks/{task['id']}/cancel", data={}, follow_redirects=False)
    assert from_page.status_code == 403 and "opened it" in from_page.text, from_page.text
    record = web.get(f"{url}/assessments/{run_id}", headers=OPERATOR).json()
    assert record["status"] == "running" and record["request"]["name"] == "nightly"
    assert record["request"]["trials"] == 1
    assert web.get(f"{url}/tasks", headers=OPERATOR).json()["total"] == 1
    assert web.get(f"{url}/tasks/{task['id']}", headers=OPERATOR).json()["status"] == "running"

    own = web.post(f"{url}/runs", json={"name": "mine", "task_ids": ["arvo:900002"]}).json()
    key = {"Authorization": f"Bearer {own['key']}"}
    other = {"Authorization": "Bearer someone-else"}
    for headers in (None, other):  # another anonymous caller, with or without a credential
        r = web.post(f"{url}/runs/{own['id']}/end", json={}, headers=headers)
        assert r.status_code == 403, r.text
    again = web.post(
        f"{url}/runs",
        json={"name": "mine", "task_ids": ["arvo:900002"], "resume": own["id"]},
        headers=key,
    )
    assert again.status_code == 201, again.text
    assert web.post(f"{url}/runs/{own['id']}/end", json={}, headers=key).status_code == 200
    # one that sent a credential of its own owns its run by it
    by_own = web.post(
        f"{url}/runs", json={"name": "by own", "task_ids": ["arvo:900002"]}, headers=other
    ).json()
    assert "key" not in by_own
    assert web.post(f"{url}/runs/{by_own['id']}/end", json={}).status_code == 403
    assert web.post(f"{url}/runs/{by_own['id']}/end", json={}, headers=other).status_code == 200
    web.post(f"{url}/tasks/{task['id']}/cancel", headers=OPERATOR)
    wait_terminal(url, task["id"])
    assert web.post(f"{url}/runs/{run_id}/end", json={}, headers=OPERATOR).status_code == 200


def test_9_a_run_ended_while_a_task_of_it_runs_is_a_409_that_says_why(start_green, scripted_purple):
    """Before: 500, "green had an internal error" (nothing to aggregate)."""
    slow, _ = scripted_purple(Script(commands=["sleep 1"] * 30, submit=False))
    url = start_green(purple_url=slow).url
    body = {"name": "nightly", "task_ids": ["arvo:900001"]}
    run_id = web.post(f"{url}/runs", json=body, headers=OPERATOR).json()["id"]
    task = submit_task(url, {"task": "arvo:900001", "run_id": run_id})
    wait_status(url, task["id"], "running")
    for interrupted in (False, True):
        r = web.post(
            f"{url}/runs/{run_id}/end", json={"interrupted": interrupted}, headers=OPERATOR
        )
        assert r.status_code == 409, r.text
        assert f"task {task['id']} is running" in r.json()["detail"]
    record = web.get(f"{url}/assessments/{run_id}", headers=OPERATOR).json()
    assert record["status"] == "running" and record["result"] is None
    web.post(f"{url}/tasks/{task['id']}/cancel", headers=OPERATOR)
    wait_terminal(url, task["id"])
    ended = web.post(f"{url}/runs/{run_id}/end", json={}, headers=OPERATOR)
    assert ended.json() == {"id": run_id, "status": "completed"}


async def test_arena_without_a_token_changes_its_run_with_the_key_green_gave(start_green):
    """On an open plane, ``arena`` with no token opens its run, then joins a task to it and
    ends it with the run's key; another client without it cannot, and a resume it cannot make
    opens a new run."""
    url = start_green(open_operator_plane=True).url
    async with httpx.AsyncClient(auth=GreenAuth(url, None), timeout=30) as http:
        arena = GreenClient(http, url, grace_s=5)
        run_id = await arena.open_run("mine", ["arvo:900001"], None, 1, None)
        assert run_id is not None
        joined = await arena.post_task({"task": "arvo:900001", "run_id": run_id})
        assert joined.status_code == 202, joined.text
        cancelled = await http.post(f"{url}/tasks/{joined.json()['id']}/cancel")
        assert cancelled.status_code in (200, 202), cancelled.text
        wait_terminal(url, joined.json()["id"])
        assert await arena.end_run(run_id, interrupted=True) is None  # recorded
    async with httpx.AsyncClient(auth=GreenAuth(url, None), timeout=30) as http:
        other = GreenClient(http, url, grace_s=5)
        note = await other.end_run(run_id, interrupted=False)
        assert note is not None and "HTTP 403" in note and "opened it" in note
        again = await other.open_run("mine", ["arvo:900001"], None, 1, run_id)
        assert again is not None and again != run_id
