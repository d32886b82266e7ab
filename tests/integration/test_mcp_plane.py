"""The agent plane over MCP: a bundled task driven end to end through green's ``/mcp`` with the
official MCP client (list tools, run commands, submit), its scores equal to the same answer's
through A2A, and each refusal (a wrong token, an ended one, none) a sentence that names nothing
of green."""

from __future__ import annotations

import threading
import time

import pytest

from tests.integration.helpers import OPERATOR, submit_task, wait_status, wait_terminal
from tests.integration.test_green_lifecycle import perfect_file_and_function
from tests.support import web
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


def held_task(start_green, scripted_purple, **settings):
    """Green and one running task whose purple only holds it (the test is its agent, over
    MCP); (green, task, token, the hold to release once the task ended)."""
    hold = threading.Event()
    purple_url, seen = scripted_purple(Script(commands=[], hold=hold, submit=False))
    green = start_green(purple_url=purple_url, **settings)
    task = submit_task(green.url, {"task": TASK})
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
