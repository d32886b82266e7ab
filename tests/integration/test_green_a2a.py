"""Starting tasks over A2A: 'Task ID: arvo:<n>' streams status updates and ends with a Result."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import TaskState

from fixtures.catalog import get_task
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import (
    OPERATOR,
    rpc,
    start_a2a_task,
    stream_message,
    wait_terminal,
)
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker


def test_task_id_message_streams_and_ends_with_a_result_artifact(
    start_green, scripted_purple, docker_client
):
    t = get_task(900004)
    purple_url, _ = scripted_purple(
        Script(
            commands=["ls"],
            submissions=[
                {
                    "locations": [
                        {
                            "file": t.fix_file,
                            "function": t.fix_function,
                            "line_start": 1,
                            "line_end": 3,
                        }
                    ]
                }
            ],
        )
    )
    green = start_green()
    events = asyncio.run(
        stream_message(green.url, "Task ID: arvo:900004", {"purple_url": purple_url})
    )

    statuses = [ev.status_update.status for ev in events if ev.HasField("status_update")]
    texts = [" ".join(get_text_parts(s.message.parts)) for s in statuses if s.HasField("message")]
    assert any("running" in x for x in texts) and any("completed" in x for x in texts), texts
    assert statuses[-1].state == TaskState.TASK_STATE_COMPLETED
    artifacts = [ev.artifact_update.artifact for ev in events if ev.HasField("artifact_update")]
    assert [a.name for a in artifacts] == ["Result"]
    result = get_data_parts(artifacts[0].parts)[0]
    assert result["tasks"][0]["arvo_id"] == "900004" and result["tasks"][0]["status"] == "completed"
    assert result["tasks"][0]["scores"]["file@1"] == 1.0
    assert result["aggregate"]["n_tasks"] == 1
    assert leftover_containers(docker_client, green.owner) == []


def test_agentbeats_assessment_request_runs_every_task(start_green, scripted_purple):
    purple_url, _ = scripted_purple(
        Script(
            commands=[],
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green()
    request = {
        "participants": {"agent": purple_url},
        "config": {"task_ids": ["arvo:900001", 900002], "max_steps": 5},
    }
    events = asyncio.run(stream_message(green.url, json.dumps(request)))
    artifacts = [ev.artifact_update.artifact for ev in events if ev.HasField("artifact_update")]
    result = get_data_parts(artifacts[-1].parts)[0]
    assert sorted(t["arvo_id"] for t in result["tasks"]) == ["900001", "900002"]
    assert all(t["status"] == "completed" for t in result["tasks"])
    assert result["aggregate"]["n_tasks"] == 2 and result["aggregate"]["mean_all"]["file@1"] == 0.0


def test_assessment_with_unknown_tasks_fails_cleanly_naming_them_all(start_green):
    """An AgentBeats request (and POST /assessments) naming ids green does not know starts
    nothing and names every one: none of them can enter a mean as a task scoring 0."""
    green = start_green()
    ids = ["arvo:31337", "arvo:900001", "arvo:31338"]
    request = {"participants": {"agent": "http://127.0.0.1:9"}, "config": {"task_ids": ids}}
    events = asyncio.run(stream_message(green.url, json.dumps(request)))
    final = [ev.status_update.status for ev in events if ev.HasField("status_update")][-1]
    assert final.state == TaskState.TASK_STATE_FAILED
    said = " ".join(get_text_parts(final.message.parts))
    assert "green does not know 2 of the tasks: arvo:31337: " in said and "arvo:31338: " in said
    rest = web.post(f"{green.url}/assessments", headers=OPERATOR, json={"task_ids": ids})
    assert rest.status_code == 404, rest.text
    assert [u["task"] for u in rest.json()["unknown"]] == ["arvo:31337", "arvo:31338"]
    assert web.get(f"{green.url}/tasks", headers=OPERATOR).json()["total"] == 0


def test_agent_card_is_reachable_and_speaks_both_protocols(start_green):
    green = start_green(host="0.0.0.0")
    card = web.get(f"http://127.0.0.1:{green.port}/.well-known/agent-card.json").json()
    urls = {i["url"] for i in card["supportedInterfaces"]}
    assert urls == {f"http://127.0.0.1:{green.port}/"}, "never advertise 0.0.0.0"
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0", "0.3"}
    assert card["url"] == f"http://127.0.0.1:{green.port}/"  # the 0.3 field
    assert web.get(f"http://127.0.0.1:{green.port}/docs").status_code == 200


def test_rest_assessment_runs_tasks_and_keeps_the_result(start_green, scripted_purple):
    purple_url, _ = scripted_purple(
        Script(
            commands=[],
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green(purple_url=purple_url)
    r = web.post(
        f"{green.url}/assessments", headers=OPERATOR, json={"task_ids": ["arvo:900001", "900002"]}
    )
    assert r.status_code == 202, r.text
    body = r.json()
    for task_id in body["task_ids"]:
        wait_terminal(green.url, task_id)
    for _ in range(100):
        rec = web.get(f"{green.url}/assessments/{body['id']}", headers=OPERATOR).json()
        if rec["status"] != "running":
            break
        time.sleep(0.1)
    assert rec["status"] == "completed"
    assert rec["result"]["aggregate"]["n_tasks"] == 2
    listed = web.get(
        f"{green.url}/tasks", headers=OPERATOR, params={"assessment_id": body["id"]}
    ).json()
    assert listed["total"] == 2
    assert (
        web.post(
            f"{green.url}/assessments", headers=OPERATOR, json={"task_ids": ["arvo:777"]}
        ).status_code
        == 404
    )
    # a kind this green does not serve (GREEN_SWEBENCH_INSTANCES unset) is a bad request, not a 404
    for path, body in (
        ("/assessments", {"task_ids": ["swebench:x__y-1"]}),
        ("/tasks", {"task": "swebench:x__y-1"}),
    ):
        r = web.post(f"{green.url}{path}", headers=OPERATOR, json=body)
        assert r.status_code == 422 and "unknown task kind 'swebench'" in r.text, r.text
    assert (
        web.post(f"{green.url}/assessments", headers=OPERATOR, json={"task_ids": []}).status_code
        == 422
    )
    assert web.get(f"{green.url}/assessments/nope", headers=OPERATOR).status_code == 404


def test_a_quiet_assessment_still_streams_heartbeats(start_green, scripted_purple):
    """A purple that takes its time (a slow LLM) must not leave the stream silent."""
    purple_url, _ = scripted_purple(
        Script(
            commands=["true"],
            pause_s=3.0,
            submissions=[{"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}],
        )
    )
    green = start_green(assessment_heartbeat_s=0.4)
    request = {"participants": {"agent": purple_url}, "config": {"task_ids": ["arvo:900001"]}}
    events = asyncio.run(stream_message(green.url, json.dumps(request)))
    texts = [
        " ".join(get_text_parts(ev.status_update.status.message.parts))
        for ev in events
        if ev.HasField("status_update") and ev.status_update.status.HasField("message")
    ]
    assert any("0/1 task(s) ended; still working" in t for t in texts), texts


def test_the_operator_cancels_an_a2a_task_and_its_green_task_ends_cancelled(
    start_green, scripted_purple, docker_client
):
    purple_url, _ = scripted_purple(Script(commands=["sleep 1"] * 120, pause_s=0.5, submit=False))
    green = start_green(purple_url=purple_url, task_timeout_s=300, max_steps=500)
    sent = start_a2a_task(green.url, "Task ID: arvo:900001")

    def running() -> list[dict]:
        listed = web.get(f"{green.url}/tasks", headers=OPERATOR, timeout=10).json()["items"]
        return [t for t in listed if t["status"] == "running" and t["steps"] >= 1]

    deadline = time.monotonic() + 120
    while not (found := running()):
        assert time.monotonic() < deadline, "the A2A task's green task never ran a command"
        time.sleep(0.2)
    [task] = found

    answer = rpc(green.url, "tasks/cancel", {"id": sent["id"]}, headers=OPERATOR).json()
    assert answer.get("result", {}).get("status", {}).get("state") == "canceled", answer
    ended = wait_terminal(green.url, task["id"], timeout=30)
    assert (ended["status"], ended["end_reason"]) == ("cancelled", "cancelled"), ended
    assert leftover_containers(docker_client, green.owner) == []
    got = rpc(green.url, "tasks/get", {"id": sent["id"]}, headers=OPERATOR).json()["result"]
    assert got["status"]["state"] == "canceled"
