"""The agent plane over MCP: a bundled task driven end to end through green's ``/mcp`` with the
official MCP client (list tools, run commands, submit), its scores equal to the same answer's
through A2A, and each refusal (a wrong token, an ended one, none) a sentence that names nothing
of green."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from services.green.tasks.live_task import BUSY, NOT_SERVED, STEP_LIMIT
from tests.integration.helpers import (
    OPERATOR,
    OPERATOR_TOKEN,
    submit_task,
    wait_status,
    wait_terminal,
)
from tests.integration.test_green_lifecycle import perfect_file_and_function
from tests.support import web
from tests.support.hostile_http import execute_rpc, reply_text
from tests.support.mcp_client import task_client, text_of
from tests.support.scripted_purple import Observed, Script

pytestmark = pytest.mark.docker
TASK = "arvo:900001"


def wait_token(seen: Observed, n: int = 1, timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while len(seen.tokens) < n:
        assert time.monotonic() < deadline, "purple never got its task"
        time.sleep(0.1)
    return seen.tokens[n - 1]


def held_task(start_green, scripted_purple, ref: str = TASK, **settings):
    """Green and one running task whose purple only holds it (the test is its agent, over
    MCP); (green, task, token, the hold to release once the task ended)."""
    hold = threading.Event()
    purple_url, seen = scripted_purple(Script(commands=[], hold=hold, submit=False))
    green = start_green(purple_url=purple_url, **settings)
    task = submit_task(green.url, {"task": ref})
    token = wait_token(seen)
    wait_status(green.url, task["id"], "running")
    return green, task, token, hold


async def test_a_locate_task_end_to_end_over_mcp_scores_as_over_a2a(start_green, scripted_purple):
    green, task, token, hold = held_task(start_green, scripted_purple)
    answer = perfect_file_and_function(900001)
    async with task_client(green.url, token) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"run_bash", "read_file", "search_code", "submit"}, tools
        assert "30 commands" in tools["run_bash"].description  # the task's limits
        listed = text_of(await client.call_tool("run_bash", {"command": "ls /workspace"}))
        assert "<returncode>0</returncode>" in listed and "error.txt" in listed, listed
        report = text_of(await client.call_tool("read_file", {"path": "error.txt", "end_line": 3}))
        assert "     1\t" in report, report
        found = await client.call_tool(
            "search_code", {"pattern": answer["locations"][0]["function"]}
        )
        assert answer["locations"][0]["file"].split("/")[-1] in text_of(found), text_of(found)
        bad = await client.call_tool("submit", {"locations": [{"file": "x.c"}]})
        assert bad.is_error and "line_start" in text_of(bad), text_of(bad)
        done = await client.call_tool("submit", answer)
        assert not done.is_error and "accepted" in text_of(done), text_of(done)
    over_mcp = wait_terminal(green.url, task["id"])
    hold.set()
    assert over_mcp["status"] == "completed", over_mcp
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert commands[0]["command"] == "ls /workspace"
    assert len(commands) == 4, commands  # ls, read_file, search_code, writing loc.json

    a2a_url, _ = scripted_purple(Script(commands=[], submissions=[answer]))
    other = submit_task(green.url, {"task": TASK, "purple_url": a2a_url})
    over_a2a = wait_terminal(green.url, other["id"])
    assert over_a2a["status"] == "completed", over_a2a
    assert over_mcp["scores"] == over_a2a["scores"], (over_mcp["scores"], over_a2a["scores"])
    assert over_mcp["scores"]["file@1"] == 1.0, over_mcp["scores"]


# ---- refusals: each a sentence, the same as A2A's, naming nothing of green ----------------------

INTERNALS = ("Traceback", "services.", "docker", "/var/lib", "sqlalchemy", "starlette", "mcp.")


def mcp_post(green_url: str, token: str | None, body: dict) -> tuple[int, str]:
    """One raw MCP request (as a client without the SDK sends it); (status, body)."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    r = web.post(f"{green_url}/mcp", json=body, headers=headers, timeout=30)
    return r.status_code, r.text


LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


async def test_a_wrong_missing_or_ended_token_is_refused_with_the_a2a_sentence(
    start_green, scripted_purple
):
    green, task, token, hold = held_task(start_green, scripted_purple)
    refusals = {
        "none": mcp_post(green.url, None, LIST),
        "wrong": mcp_post(green.url, "guess", LIST),
        "the operator's": mcp_post(green.url, OPERATOR_TOKEN, LIST),
    }
    async with task_client(green.url, token) as client:
        await client.call_tool("submit", perfect_file_and_function(900001))
    wait_terminal(green.url, task["id"])
    hold.set()
    refusals["ended"] = mcp_post(green.url, token, LIST)
    a2a = reply_text(web.post(f"{green.url}/", json=execute_rpc(task["id"], "id", token)))
    print(f"\nrefusals: {refusals} / A2A: {a2a!r}")
    for who, (status, said) in refusals.items():
        assert status == 401 and NOT_SERVED in said, (who, status, said)
        assert not any(word in said for word in INTERNALS), (who, said)
        assert "completed" not in said, (who, said)
    assert NOT_SERVED in a2a  # the same sentence over A2A
    with pytest.raises(Exception) as raised:  # the official client does not get in either
        async with task_client(green.url, token) as client:
            await client.list_tools()
    assert NOT_SERVED in repr(raised.value), raised.value


async def test_a_token_reaches_only_its_own_task(start_green, scripted_purple):
    hold = threading.Event()
    purple_url, seen = scripted_purple(Script(commands=[], hold=hold, submit=False))
    green = start_green(purple_url=purple_url)
    first, second = (submit_task(green.url, {"task": TASK}) for _ in range(2))
    wait_token(seen, 2)
    tokens = dict(zip(seen.task_ids, seen.tokens, strict=True))
    for task in (first, second):
        wait_status(green.url, task["id"], "running")
    async with task_client(green.url, tokens[second["id"]]) as client:
        said = text_of(await client.call_tool("run_bash", {"command": "echo mine > /tmp/mine"}))
        assert "<returncode>0</returncode>" in said, said
    async with task_client(green.url, tokens[first["id"]]) as client:
        said = text_of(await client.call_tool("run_bash", {"command": "cat /tmp/mine"}))
        assert "No such file" in said, said  # another container
    # A2A with one task's context and the other's token: refused, as before
    crossed = execute_rpc(first["id"], "id", tokens[second["id"]])
    assert NOT_SERVED in reply_text(web.post(f"{green.url}/", json=crossed))

    def commands(task):
        got = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
        return [c["command"] for c in got]

    assert commands(first) == ["cat /tmp/mine"] and commands(second) == ["echo mine > /tmp/mine"]
    for task in (first, second):
        web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR)
    hold.set()


async def test_one_command_at_a_time_across_mcp_and_a2a_and_the_step_limit(
    start_green, scripted_purple
):
    green, task, token, hold = held_task(start_green, scripted_purple, max_steps=2)
    async with task_client(green.url, token) as client:
        slow = asyncio.create_task(client.call_tool("run_bash", {"command": "sleep 3; echo slow"}))
        await asyncio.sleep(1.0)
        a2a = await asyncio.to_thread(
            web.post, f"{green.url}/", json=execute_rpc(task["id"], "echo a2a", token), timeout=30
        )
        again = await client.call_tool("run_bash", {"command": "echo mcp"})
        assert "slow" in text_of(await slow)
        assert BUSY in reply_text(a2a), reply_text(a2a)
        assert again.is_error and BUSY in text_of(again), text_of(again)
        assert "<returncode>0" in text_of(await client.call_tool("run_bash", {"command": "true"}))
        over = await client.call_tool("read_file", {"path": "error.txt"})
        assert over.is_error and STEP_LIMIT.format(2) in text_of(over), text_of(over)
        unknown = await client.call_tool("run_poc", {})
        assert unknown.is_error and "no tool 'run_poc'" in text_of(unknown), text_of(unknown)
        odd = await client.call_tool("run_bash", {"command": ""})
        assert odd.is_error and "invalid arguments for run_bash" in text_of(odd), text_of(odd)
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert [c["command"] for c in commands] == ["sleep 3; echo slow", "true"], commands
    web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR)
    hold.set()


async def test_run_poc_is_a_tool_where_the_task_offers_it(start_green, scripted_purple):
    green, task, token, hold = held_task(start_green, scripted_purple, ref=f"{TASK}-no-poc-file")
    async with task_client(green.url, token) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert tools == ["run_bash", "read_file", "search_code", "run_poc", "submit"], tools
        run = text_of(await client.call_tool("run_poc", {}))
    assert "AddressSanitizer: heap-buffer-overflow" in run and "xml_decode_entity" in run, run
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert [c["command"] for c in commands] == ["run_poc"]  # a step, recorded as A2A's is
    web.post(f"{green.url}/tasks/{task['id']}/cancel", headers=OPERATOR)
    hold.set()
