"""How a task's end reaches both sides (real green, real purple with the ReAct agent, the local
OpenAI-compatible test server): the agent's own reason and its usage reach green's record even
when nothing is submitted, and green cancels purple's task whenever it ends a task, stopping
purple's in-flight model call."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from services.arena.client import GreenClient
from services.arena.report import _why
from services.arena.results import outcome_from_task
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.fake_llm import FakeError, FakeReply

pytestmark = pytest.mark.docker


def bash(command: str, tokens_in: int, tokens_out: int) -> FakeReply:
    return FakeReply(
        tool_calls=[("run_bash_cmd", {"command": command})],
        prompt_tokens=tokens_in,
        completion_tokens=tokens_out,
    )


def test_the_agents_reason_and_usage_reach_green_when_it_submits_nothing(
    start_green, llm, llm_purple
) -> None:
    llm.push(
        bash("head -5 /workspace/error.txt", 700, 20),
        bash("ls /workspace/src-vul", 900, 30),
        FakeError(404, "The model `fake-model` does not exist.", type="NotFoundError"),
    )
    purple = llm_purple()
    green = start_green(purple_url=purple.url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])

    assert done["status"] == "failed" and done["failure_kind"] == "agent"  # green's own finding
    assert "loc.json does not exist" in done["error"]
    assert "NotFoundError" in done["agent_reason"] and "does not exist" in done["agent_reason"]
    assert (done["tokens_in"], done["tokens_out"]) == (1600, 50) == llm.usage_totals
    # arena's results and its report's "why" carry it, marked as the agent's words
    outcome = outcome_from_task(done)
    assert outcome.agent_reason == done["agent_reason"] and outcome.tokens_in == 1600
    assert 'the agent said: "LLMError: NotFoundError' in _why(outcome)
    # the dashboard's task page shows it
    page = web.get(f"{green.url}/ui/tasks/{task['id']}", headers=OPERATOR)
    assert "The agent said" in page.text and "does not exist" in page.text


async def test_arena_saves_purples_full_trajectory(start_green, llm, llm_purple, tmp_path) -> None:
    llm.push(bash("true", 500, 5), FakeError(404, "gone", type="NotFoundError"))
    purple = llm_purple()
    green = start_green(purple_url=purple.url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    dest = tmp_path / "trajectory.json"
    async with httpx.AsyncClient(headers=OPERATOR) as http:  # through green: no purple address
        note = await GreenClient(http, green.url, 1.0).save_trajectory(done["id"], dest)
    assert note is None
    saved = json.loads(dest.read_text())
    (call,) = [c for s in saved["steps"] for c in s["llm_calls"]]
    assert (call["tokens_in"], call["finish_reason"]) == (500, "tool_calls")
    assert call["duration_s"] >= 0 and saved["task_id"] == done["id"]
    assert saved["status"] == "failed"  # purple's view of its run, as green served it


def test_green_cancels_purples_task_and_its_model_call_when_it_ends_the_task(
    start_green, llm, llm_purple
) -> None:
    llm.push(bash("true", 400, 10), FakeReply(content="never in time", delay_s=60))
    purple = llm_purple()
    green = start_green(purple_url=purple.url, idle_timeout_s=3)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["end_reason"] == "idle_timeout"
    assert "cancelled by green" in (done["agent_reason"] or "")
    assert (done["tokens_in"], done["tokens_out"]) == (400, 10)  # reported with the command
    view = web.get(f"{purple.url}/tasks/{task['id']}").json()
    assert view["status"] == "cancelled" and view["tokens_in"] == 400
    time.sleep(1)
    assert len(llm.requests) == 2  # the model call was stopped, not sent again
