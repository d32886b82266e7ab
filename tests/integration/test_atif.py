"""A task's trajectory as ATIF v1.8 through green's ``GET /tasks/{id}/trajectory?format=atif``:
real green, a real purple (the ReAct agent on a local OpenAI-compatible server the test starts,
or the offline stack-trace analyst) and real task containers; every document is validated with
the ``atif`` package's own models."""

from __future__ import annotations

from typing import Any

import atif
import pytest

from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.fake_llm import FakeReply

pytestmark = pytest.mark.docker

SRC = "/workspace/src-vul/xmlmini"
RIGHT = [{"file": "src/entity.c", "function": "xml_decode_entity", "line_start": 1, "line_end": 3}]


def _atif(green_url: str, task_id: str) -> atif.Trajectory:
    r = web.get(f"{green_url}/tasks/{task_id}/trajectory?format=atif", headers=OPERATOR)
    assert r.status_code == 200, r.text[:500]
    return atif.Trajectory.model_validate(r.json())


def _bash(command: str, **usage: Any) -> FakeReply:
    return FakeReply(tool_calls=[("run_bash_cmd", {"command": command})], **usage)


def test_an_llm_task_as_atif_has_the_servers_steps_and_tokens(start_green, llm, llm_purple):
    """Five turns, one compaction: each model call is one agent step with the server's tokens
    (cached ones and reasoning where it sent them), each tool answer is that step's observation
    by call id, the compaction a system step without usage, and the totals are the server's."""
    llm.push(
        _bash("head -20 /workspace/error.txt", prompt_tokens=1900, completion_tokens=31),
        _bash("ls /workspace/src-vul/xmlmini/src", prompt_tokens=2300, completion_tokens=17),
        FakeReply(
            tool_calls=[
                ("show_file", {"path": f"{SRC}/src/entity.c", "start_line": 1, "end_line": 9})
            ],
            prompt_tokens=2700,
            completion_tokens=40,
            cached_tokens=2048,
            reasoning="the report's top frame is in entity.c",
        ),
        _bash("grep -n decode /workspace/src-vul/xmlmini/src/entity.c", prompt_tokens=1200),
        FakeReply(
            tool_calls=[("submit_localization", {"locations": RIGHT, "reasoning": "bound"})],
            prompt_tokens=1400,
            completion_tokens=66,
            cost=0.0123,
        ),
    )
    green = start_green(purple_url=llm_purple(context_budget_tokens=1500).url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "completed", done["error"]

    doc = _atif(green.url, task["id"])
    assert doc.schema_version == "ATIF-v1.8" and doc.session_id == task["id"]
    assert doc.agent.model_name == "fake-model" and doc.agent.version
    turns = [s for s in doc.steps if s.source == "agent"]
    assert len(turns) == len(llm.replies) == 5
    assert all(s.llm_call_count == 1 and s.metrics is not None for s in turns)
    assert [s.metrics.prompt_tokens for s in turns] == [r.prompt_tokens for r in llm.replies]
    assert [s.metrics.completion_tokens for s in turns] == [
        r.completion_tokens for r in llm.replies
    ]
    tokens_in, tokens_out = llm.usage_totals
    final = doc.final_metrics
    assert (final.total_prompt_tokens, final.total_completion_tokens) == (tokens_in, tokens_out)
    assert (done["tokens_in"], done["tokens_out"]) == (tokens_in, tokens_out)
    assert final.total_steps == len(doc.steps)

    # cached tokens and reasoning only where the server sent them; never a made-up 0
    assert [s.metrics.cached_tokens for s in turns] == [None, None, 2048, None, None]
    assert turns[2].reasoning_content == "the report's top frame is in entity.c"
    assert [s.reasoning_content for s in turns[:2]] == [None, None]
    assert final.total_cached_tokens is None  # four calls did not say
    # fake-model has no price: no cost, except the call whose answer carried one
    assert [s.metrics.cost_usd for s in turns] == [None, None, None, None, 0.0123]
    assert turns[4].metrics.extra["cost_source"] == "server"
    assert final.total_cost_usd is None

    # the prompt and the task first; every tool answer belongs to its call
    assert [s.source for s in doc.steps[:2]] == ["system", "user"]
    assert "loc.json" in doc.steps[1].message
    first = turns[0]
    assert first.tool_calls[0].function_name == "run_bash_cmd"
    assert first.tool_calls[0].arguments == {"command": "head -20 /workspace/error.txt"}
    assert first.observation.results[0].source_call_id == first.tool_calls[0].tool_call_id
    assert "AddressSanitizer" in first.observation.results[0].content
    assert first.extra["commands"][0]["command"] == "head -20 /workspace/error.txt"
    assert turns[4].tool_calls[0].arguments["locations"][0]["file"] == "src/entity.c"

    # the compaction: a system step, its summary the observation, no usage of its own
    compactions = [s for s in doc.steps if s.extra and s.extra.get("event") == "compaction"]
    assert compactions, [s.message for s in doc.steps]
    assert all(s.source == "system" and s.metrics is None for s in compactions)
    assert "head -20 /workspace/error.txt" in compactions[0].observation.results[0].content


def test_a_reply_without_usage_has_no_tokens_and_no_total(start_green, llm, llm_purple):
    """A server that sends no usage: that step's tokens are absent, and so are the totals (the
    sum of the others would be a number the server never gave)."""
    llm.push(
        _bash("true", prompt_tokens=900, completion_tokens=12),
        FakeReply(
            tool_calls=[("submit_localization", {"locations": RIGHT, "reasoning": "bound"})],
            usage=False,
        ),
    )
    green = start_green(purple_url=llm_purple().url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    assert wait_terminal(green.url, task["id"])["status"] == "completed"

    doc = _atif(green.url, task["id"])
    turns = [s for s in doc.steps if s.source == "agent"]
    assert [s.metrics.prompt_tokens for s in turns] == [900, None]
    assert [s.metrics.completion_tokens for s in turns] == [12, None]
    assert doc.final_metrics.total_prompt_tokens is None
    assert doc.final_metrics.total_completion_tokens is None


def test_the_analysts_trajectory_is_model_free_steps_and_a_bad_format_is_refused(
    start_green, analyst_url
):
    """The offline analyst calls no model: its commands and findings are agent steps with
    ``llm_call_count`` 0 and no metrics, and no total is made up. ``format=`` other than
    purple or atif: 422, naming the two."""
    green = start_green(purple_url=analyst_url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    assert wait_terminal(green.url, task["id"])["status"] == "completed"

    doc = _atif(green.url, task["id"])
    assert doc.agent.extra == {"policy": "stack-trace-analyst"} and doc.agent.model_name is None
    assert doc.steps and all(s.source == "agent" for s in doc.steps)
    assert all(s.llm_call_count == 0 and s.metrics is None for s in doc.steps)
    commands = [s for s in doc.steps if s.tool_calls]
    assert commands and all(
        s.observation.results[0].source_call_id == s.tool_calls[0].tool_call_id for s in commands
    )
    assert any("crash report" in s.message for s in doc.steps)
    final = doc.final_metrics
    assert (final.total_prompt_tokens, final.total_cost_usd) == (None, None)
    assert final.extra == {"llm_calls": 0} and "no model was called" in doc.notes

    for bad in ("ATIF", "otel", ""):
        r = web.get(f"{green.url}/tasks/{task['id']}/trajectory?format={bad}", headers=OPERATOR)
        assert r.status_code == 422, (bad, r.text)
        assert "'purple' or 'atif'" in r.text and r.json()["errors"][0]["where"] == "query.format"
    native = web.get(f"{green.url}/tasks/{task['id']}/trajectory", headers=OPERATOR).json()
    assert (
        native["policy"] == "stack-trace-analyst" and "steps" in native
    )  # unchanged without format
