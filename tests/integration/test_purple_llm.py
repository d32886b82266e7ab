"""The real purple service with the ReAct agent, a local OpenAI-compatible server, real green."""

from __future__ import annotations

import json

import pytest

from services.purple.agent.parser import format_text_call
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.fake_llm import FakeReply

pytestmark = pytest.mark.docker

SRC = "/workspace/src-vul/xmlmini"
WRONG = [{"file": "src/nowhere.c", "function": "f", "line_start": 1, "line_end": 2}]
RIGHT = [
    {
        "file": "src/entity.c",
        "function": "xml_decode_entity",
        "line_start": 1,
        "line_end": 3,
        "description": "reads past the end of the entity",
    }
]


def test_tool_calling_agent_explores_fixes_a_refused_submission_and_counts_tokens(
    start_green, llm, llm_purple, docker_client
):
    llm.push(
        FakeReply(
            tool_calls=[("run_bash_cmd", {"command": "head -20 /workspace/error.txt"})],
            prompt_tokens=900,
            completion_tokens=30,
        ),
        FakeReply(
            tool_calls=[("search_code", {"pattern": "xml_decode_entity", "file_pattern": "*.c"})],
            prompt_tokens=1500,
            completion_tokens=25,
        ),
        FakeReply(
            tool_calls=[
                ("show_file", {"path": f"{SRC}/src/entity.c", "start_line": 1, "end_line": 40})
            ],
            prompt_tokens=2100,
            completion_tokens=40,
        ),
        FakeReply(
            tool_calls=[("submit_localization", {"locations": WRONG, "reasoning": "guess"})],
            prompt_tokens=2600,
            completion_tokens=60,
        ),
        FakeReply(
            tool_calls=[
                ("submit_localization", {"locations": RIGHT, "reasoning": "the bound check"})
            ],
            prompt_tokens=2900,
            completion_tokens=70,
        ),
    )
    purple = llm_purple()
    green = start_green(purple_url=purple.url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])

    assert done["status"] == "completed", done["error"]
    assert done["submissions"] == 2 and done["scores"]["file@1"] == 1.0
    tokens_in, tokens_out = llm.usage_totals
    assert (tokens_in, tokens_out) == (10000, 225)
    assert (done["tokens_in"], done["tokens_out"]) == (tokens_in, tokens_out)
    ctx = web.get(f"{purple.url}/tasks/{task['id']}").json()
    assert ctx["status"] == "submitted"
    assert (ctx["tokens_in"], ctx["tokens_out"]) == (tokens_in, tokens_out)
    # what the agent saw: the real report and source came back through green
    observations = [str(m["content"]) for m in llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert any("AddressSanitizer" in o for o in observations)
    assert any("xml_decode_entity" in o for o in observations)
    assert any("is not a file of the project" in o for o in observations)  # green refused
    assert llm.requests[0]["model"] == "fake-model" and llm.requests[0]["tools"]
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    assert commands[0]["command"] == "head -20 /workspace/error.txt"
    assert leftover_containers(docker_client, green.owner) == []


def test_text_mode_agent_submits_through_green(start_green, llm, llm_purple):
    llm.push(
        FakeReply(
            content=format_text_call(
                "run_bash_cmd", {"command": "ls src-vul/xmlmini/src"}, "Look around."
            )
        ),
        FakeReply(
            content=format_text_call(
                "submit_localization", {"locations": json.dumps(RIGHT), "reasoning": "entity bound"}
            )
        ),
    )
    purple = llm_purple(mode="text")
    green = start_green(purple_url=purple.url)
    done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["status"] == "completed", done["error"]
    assert done["scores"]["func@1"] == 1.0
    assert not llm.requests[0].get("tools")
    assert "entity.c" in str(llm.requests[1]["messages"][-1]["content"])


def test_agent_stops_at_its_step_limit_and_green_fails_the_task(start_green, llm, llm_purple):
    llm.default = FakeReply(tool_calls=[("run_bash_cmd", {"command": "true"})])
    purple = llm_purple(step_limit=3)
    green = start_green(purple_url=purple.url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "failed" and done["failure_kind"] == "agent"
    assert done["end_reason"] == "purple_failed" and "loc.json does not exist" in done["error"]
    assert len(llm.requests) == 3
    assert web.get(f"{purple.url}/tasks/{task['id']}").json()["status"] == "failed"
    # the task's provenance records what purple's card says of its model and limits
    model = done["provenance"]["purple"]["model"]
    assert model["model"] == "fake-model" and model["limits"]["step_limit"] == 3
    assert llm.base_url not in json.dumps(done["provenance"])
