"""Bad input never yields a 500: a clear error, nothing lost."""

from __future__ import annotations

import asyncio
import time

import pytest
from a2a.types import Role

from services.green.tasks.live_task import NOT_SERVED
from services.shared.a2a import A2APeer, message_parts, new_protocol_message
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, submit_task, wait_status, wait_terminal
from tests.support import web
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

VALID = {"locations": [{"file": "Makefile", "line_start": 1, "line_end": 1}]}


def test_rest_rejects_bad_requests_with_clear_4xx(start_green):
    green = start_green()
    cases = [
        (
            web.post(f"{green.url}/tasks", headers=OPERATOR, json={"task": "arvo:424242"}),
            404,
            "unknown task",
        ),
        (
            web.post(
                f"{green.url}/tasks",
                content=b"{not json",
                headers={**OPERATOR, "content-type": "application/json"},
            ),
            422,
            "invalid request",
        ),
        (  # located by line and column (json's own words), not by an offset ("body.40")
            web.post(
                f"{green.url}/tasks",
                content=b'{"task": "arvo:900001",\n "max_steps": 4,,}',
                headers={**OPERATOR, "content-type": "application/json"},
            ),
            422,
            '"where":"body, line 2 column 17","message":"JSON decode error: Expecting property',
        ),
        (
            web.post(f"{green.url}/tasks", headers=OPERATOR, json={"task": "../../etc/passwd"}),
            422,
            "not a task reference",
        ),
        (web.post(f"{green.url}/tasks", headers=OPERATOR, json={}), 422, "give 'task'"),
        (
            web.post(
                f"{green.url}/tasks",
                headers=OPERATOR,
                json={"task": "arvo:900001", "max_steps": -1},
            ),
            422,
            "max_steps",
        ),
        (web.get(f"{green.url}/tasks/nope", headers=OPERATOR), 404, "no task"),
        (web.get(f"{green.url}/tasks/nope/commands", headers=OPERATOR), 404, "no task"),
        (web.post(f"{green.url}/tasks/nope/cancel", headers=OPERATOR), 404, "no task"),
        (web.get(f"{green.url}/tasks?status=bogus", headers=OPERATOR), 422, "status"),
        (web.get(f"{green.url}/tasks?limit=0", headers=OPERATOR), 422, "limit"),
    ]
    for resp, code, text in cases:
        assert resp.status_code == code, (resp.request.url, resp.text)
        assert text in resp.text, resp.text
        assert resp.headers["content-type"].startswith("application/json")
    assert (
        web.get(f"{green.url}/tasks", headers=OPERATOR).json()["total"] == 0
    )  # nothing half-created


async def _ask(green_url: str, context_id: str, text: str, data: dict | None = None):
    peer = A2APeer(green_url)
    try:
        reply = await peer.send(
            new_protocol_message(text, data, context_id=context_id, role=Role.ROLE_USER)
        )
        return message_parts(reply)
    finally:
        await peer.aclose()


def test_protocol_requests_are_refused_without_the_token_and_after_the_end(
    start_green, scripted_purple
):
    purple_url, _seen = scripted_purple(
        Script(commands=["true"] * 2, pause_s=2.0, submissions=[VALID])
    )
    green = start_green(purple_url=purple_url)
    task = submit_task(green.url, {"task": "arvo:900002"})
    wait_status(green.url, task["id"], "running")

    wrong = asyncio.run(
        _ask(
            green.url,
            task["id"],
            "execute: id",
            {"kind": "execute", "command": "id", "token": "guess"},
        )
    )
    assert wrong.data == {"kind": "error", "message": NOT_SERVED}
    missing = asyncio.run(_ask(green.url, task["id"], "execute: id"))
    assert missing.data["kind"] == "error"
    stranger = asyncio.run(_ask(green.url, "no-such-context", "submit"))
    assert stranger.data["message"] == NOT_SERVED  # unknown, ended, running: one sentence
    nonsense = asyncio.run(_ask(green.url, task["id"], "hello there"))
    assert nonsense.data["kind"] == "error" and "Task ID" in nonsense.text

    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "completed"
    assert done["steps"] == 3  # refused requests ran nothing
    late = asyncio.run(
        _ask(
            green.url, task["id"], "execute: id", {"kind": "execute", "command": "id", "token": "x"}
        )
    )
    assert late.data["message"] == NOT_SERVED  # the status is not told to a stranger


def test_invalid_loc_json_is_refused_with_errors_then_fixed(start_green, scripted_purple):
    purple_url, seen = scripted_purple(
        Script(
            commands=[],
            submissions=[
                "{not json",
                {"locations": [{"file": "no/such/file.c", "line_start": 5, "line_end": 2}]},
                {"locations": [{"file": "does/not/exist.c", "line_start": 1, "line_end": 2}]},
                VALID,
            ],
        )
    )
    green = start_green(purple_url=purple_url)
    task = submit_task(green.url, {"task": "arvo:900003"})
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "completed" and done["submissions"] == 4
    replies = seen.submit_replies
    assert [r.accepted for r in replies] == [False, False, False, True]
    assert "not valid JSON" in replies[0].errors[0]
    assert "line_end (2) is before line_start (5)" in replies[1].errors[0]
    assert "is not a file of the project" in replies[2].errors[0]


def test_unreachable_purple_fails_the_task_with_the_reason(start_green, docker_client):
    green = start_green(purple_url="http://127.0.0.1:9")  # nothing listens there
    t0 = time.monotonic()
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"], timeout=60)
    assert time.monotonic() - t0 < 30
    assert done["status"] == "failed" and done["end_reason"] == "purple_unreachable"
    assert "could not be reached" in done["error"] and done["failure_kind"] == "agent"
    assert "refused" not in done["error"].replace("refused the task", "")  # no port oracle
    assert "Errno" not in done["error"]
    assert done["scores"]["file@1"] == 0
    assert leftover_containers(docker_client, green.owner) == []


def test_command_timeout_kills_and_reports(start_green, scripted_purple):
    purple_url, seen = scripted_purple(
        Script(
            commands=["sleep 30 & sleep 30; echo never", "ps -eo args | grep -c '^sleep 30$'"],
            submissions=[VALID],
        )
    )
    green = start_green(purple_url=purple_url, command_timeout_s=1.5)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "completed"
    slow, after = seen.results
    assert slow.timed_out and slow.exit_code != 0 and "never" not in slow.output
    assert after.output.strip() == "0"  # nothing of the killed command is left
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert commands[0]["timed_out"] is True


def test_idle_purple_ends_the_task_and_an_existing_loc_json_is_still_judged(
    start_green, scripted_purple
):
    purple_url, _ = scripted_purple(Script(commands=[], submissions=[VALID], submit=False))
    green = start_green(purple_url=purple_url, idle_timeout_s=2)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["end_reason"] in ("idle_timeout", "purple_limits", "purple_failed")
    assert done["status"] == "completed" and done["submission"] is not None


def test_cancel_a_running_task(start_green, scripted_purple, docker_client):
    purple_url, _ = scripted_purple(Script(commands=["sleep 20"], submissions=[VALID]))
    green = start_green(purple_url=purple_url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    wait_status(green.url, task["id"], "running")
    r = web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR, timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR).status_code == 409
    assert leftover_containers(docker_client, green.owner) == []


def test_a_container_that_dies_mid_task_fails_it_as_infra(
    start_green, scripted_purple, docker_client
):
    purple_url, seen = scripted_purple(
        Script(commands=["sleep 2", "echo after"], submissions=[VALID])
    )
    green = start_green(purple_url=purple_url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    running = wait_status(green.url, task["id"], "running")
    docker_client.containers.get(running["container_name"]).kill()
    done = wait_terminal(green.url, task["id"], timeout=60)
    assert done["status"] == "failed" and done["failure_kind"] == "infra"
    assert done["end_reason"] == "sandbox" and "container" in done["error"]
    # the agent hears one sentence, never the engine's detail (hosts, paths, container names)
    assert "not your fault" in (seen.ended or ""), seen.ended
    assert running["container_name"] not in (seen.ended or "")
    assert leftover_containers(docker_client, green.owner) == []
