"""A hostile MCP client gets no more than an A2A one: the attacks on ``execute`` of issue #20
(a fork loop that escapes cleanup, a command flood, a huge body, deep JSON) and issue #39
(stopping green's processes and hiding deleted-but-open files past the disk cap, replacing
green's shell, a linked loc.json) replayed through ``run_bash`` and ``submit`` at ``/mcp``,
with the attack code of their A2A tests."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.integration.helpers import OPERATOR, wait_terminal
from tests.integration.test_hostile_purple_http import _deep, _push
from tests.integration.test_mcp_plane import held_task
from tests.sandbox.test_sandbox_attacks import HIDDEN_HOLDER, STOPPER
from tests.sandbox.test_sandbox_hostile import HOPPER, LEFT
from tests.support import web
from tests.support.mcp_client import task_client, text_of
from tests.support.scripted_purple import write_file_command

pytestmark = pytest.mark.docker


async def run_all(green_url: str, token: str, commands: list[str]) -> list[str]:
    async with task_client(green_url, token) as client:
        return [
            text_of(await client.call_tool("run_bash", {"command": c, "timeout": 30}))
            for c in commands
        ]


async def test_20_1_a_fork_loop_through_run_bash_does_not_outlive_its_command(
    start_green, scripted_purple
):
    green, task, token, hold = held_task(start_green, scripted_purple, container_disk_bytes=0)
    said = await run_all(
        green.url,
        token,
        [
            write_file_command("/tmp/hop.py", HOPPER),
            "python3 /tmp/hop.py & sleep 0.5; echo started",
            "sleep 3; echo alive",
            LEFT,
        ],
    )
    assert "started" in said[1] and "alive" in said[2], said
    assert "<output>0\n</output>" in said[3], said[3]  # nothing of it survived
    web_cancel(green.url, task["id"])
    hold.set()


async def test_39_5_run_bash_cannot_replace_or_kill_what_green_runs(start_green, scripted_purple):
    green, task, token, hold = held_task(start_green, scripted_purple)
    said = await run_all(
        green.url,
        token,
        [
            "printf '#!/bin/true\\n' > /tmp/sh.new && chmod +x /tmp/sh.new",
            "cp /tmp/sh.new /bin/dash; cp /tmp/sh.new /usr/bin/bash; "
            "echo /tmp/x.so > /etc/ld.so.preload; kill -9 $PPID; echo still",
            "echo next",
        ],
    )
    assert said[1].count("Permission denied") == 3 and "Operation not permitted" in said[1]
    assert "still" in said[1] and "<output>next\n</output>" in said[2], said
    web_cancel(green.url, task["id"])
    hold.set()


async def test_39_1_to_3_through_run_bash_end_as_the_agents_disk_limit(
    start_green, scripted_purple
):
    green, task, token, hold = held_task(
        start_green, scripted_purple, container_disk_bytes=128 * 2**20, disk_check_s=0.5
    )
    async with task_client(green.url, token) as client:
        for script in (("/tmp/stop.py", STOPPER), ("/tmp/hold.py", HIDDEN_HOLDER)):
            await client.call_tool("run_bash", {"command": write_file_command(*script)})
        stalled = await client.call_tool(
            "run_bash", {"command": "python3 /tmp/stop.py 30 & sleep 30", "timeout": 3}
        )
        assert "timed out" in text_of(stalled), text_of(stalled)
        held = await client.call_tool(
            "run_bash", {"command": "python3 /tmp/stop.py 30 & python3 /tmp/hold.py 16 30"}
        )
        assert held.is_error and "Refused" in text_of(held), text_of(held)
    done = wait_terminal(green.url, task["id"])
    hold.set()
    assert (done["status"], done["failure_kind"], done["end_reason"]) == (
        "failed",
        "agent",
        "disk_limit",
    ), done


async def test_39_6_a_linked_loc_json_submitted_over_mcp_names_no_host_path(
    start_green, scripted_purple
):
    green, task, token, hold = held_task(start_green, scripted_purple)
    async with task_client(green.url, token) as client:
        await client.call_tool("run_bash", {"command": "ln -s loc.json /workspace/shared/loc.json"})
        reply = await client.call_tool("submit", {})
    said = text_of(reply)
    assert reply.is_error and "/workspace/shared/loc.json is a symbolic link" in said, said
    assert "/var/lib" not in said and "overlay2" not in said, said
    hold.set()  # purple ends its A2A task: the task ends at once, not at its idle timeout
    done = wait_terminal(green.url, task["id"])
    assert (done["status"], done["failure_kind"]) == ("failed", "agent"), done


async def test_20_4_a_run_bash_flood_runs_one_command_at_a_time(start_green, scripted_purple):
    green, task, token, hold = held_task(start_green, scripted_purple, max_steps=30)
    async with task_client(green.url, token) as client:
        replies = await asyncio.gather(
            *(client.call_tool("run_bash", {"command": "sleep 3"}) for _ in range(20)),
            return_exceptions=True,
        )
    said = [text_of(r) if not isinstance(r, BaseException) else repr(r) for r in replies]
    ran = [s for s in said if "<returncode>" in s]
    busy = [s for s in said if "one command at a time" in s]
    print(f"\n20 concurrent run_bash: {len(ran)} ran, {len(busy)} busy, the rest {said}")
    assert len(ran) == 1 and len(busy) == 19, said
    web_cancel(green.url, task["id"])
    hold.set()


def test_20_6_and_7_a_huge_body_or_deep_json_to_mcp_is_refused_before_the_sdk(
    start_green, scripted_purple
):
    green, task, token, hold = held_task(start_green, scripted_purple)
    for declared in (True, False):
        answer, sent = _push(green.port, "/mcp", 400, declared)
        assert answer.startswith("HTTP/1.1 413") and "BODY_MAX_BYTES" in answer, answer[:300]
        assert sent < 64 * 2**20, sent
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call"}
    deep = json.dumps({**call, "params": {"name": "run_bash", "arguments": "@"}})
    for who in (token, None):
        auth = {"authorization": f"Bearer {who}"} if who else {}
        r = web.post(
            f"{green.url}/mcp",
            content=deep.replace('"@"', _deep(900)),
            headers={**auth, "content-type": "application/json"},
            timeout=30,
        )
        assert r.status_code < 500 and "levels deep" in r.text, (r.status_code, r.text[:300])
    web_cancel(green.url, task["id"])
    hold.set()


def web_cancel(green_url: str, task_id: str) -> None:
    web.post(f"{green_url}/tasks/{task_id}/cancel", headers=OPERATOR)
