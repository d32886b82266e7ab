"""Opt-in OpenTelemetry traces: a task run through real green and purple (the ReAct agent on the
local OpenAI-compatible server) reaches a real OTLP/HTTP receiver as one trace, with the GenAI
conventions' span names, links and attributes, and no prompt or output unless asked for."""

from __future__ import annotations

import json

import pytest

from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.integration.test_purple_llm import RIGHT, SRC
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.otlp_receiver import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.docker

CONTENT_KEYS = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}
SERVER_KIND, CLIENT_KIND, INTERNAL_KIND = 2, 3, 1  # the protobuf's SpanKind numbers


@pytest.fixture
def otlp(monkeypatch: pytest.MonkeyPatch):
    with OtlpReceiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # ms: spans leave at once
        yield receiver


def _script(llm) -> None:
    llm.push(
        FakeReply(
            tool_calls=[("run_bash_cmd", {"command": "head -20 /workspace/error.txt"})],
            prompt_tokens=900,
            completion_tokens=30,
        ),
        FakeReply(
            tool_calls=[("show_file", {"path": f"{SRC}/src/entity.c", "start_line": 1})],
            prompt_tokens=1500,
            completion_tokens=25,
        ),
        FakeReply(
            tool_calls=[("submit_localization", {"locations": RIGHT, "reasoning": "the bound"})],
            prompt_tokens=2100,
            completion_tokens=40,
        ),
    )


def _run_task(start_green, llm, llm_purple, otlp) -> tuple[dict, list[ReceivedSpan]]:
    _script(llm)
    purple = llm_purple()
    green = start_green(purple_url=purple.url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    assert done["status"] == "completed", done["error"]
    done["commands"] = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    spans = otlp.wait_for(
        lambda spans: (
            any(s.name == "arena.task" for s in spans)
            and sum(s.name.startswith("chat ") for s in spans) >= len(llm.requests)
        )
    )
    return done, [s for s in spans if s.trace_id == _trace_of(spans, task["id"])]


def _trace_of(spans: list[ReceivedSpan], task_id: str) -> str | None:
    return next((s.trace_id for s in spans if s.attributes.get("arena.task.id") == task_id), None)


def _one(spans: list[ReceivedSpan], prefix: str) -> ReceivedSpan:
    found = [s for s in spans if s.name.startswith(prefix)]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


def test_a_task_is_one_trace_with_the_genai_spans_and_no_content(
    otlp, start_green, llm, llm_purple
):
    done, trace = _run_task(start_green, llm, llm_purple, otlp)

    task = _one(trace, "arena.task")
    assert (task.service, task.parent_span_id) == ("arena-green", "")  # the trace's root
    assert task.attributes["arena.task.status"] == "completed"
    assert task.attributes["arena.task.ref"] == "arvo:900001"
    assert task.attributes["gen_ai.conversation.id"] == done["id"]

    agent = _one(trace, "invoke_agent")
    assert agent.name == "invoke_agent react" and agent.service == "arena-purple"
    assert agent.parent_span_id == task.span_id  # green's traceparent reached purple
    assert agent.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert agent.attributes["gen_ai.agent.name"] == "react"
    assert agent.attributes["gen_ai.request.model"] == "fake-model"
    assert agent.attributes["gen_ai.conversation.id"] == done["id"]
    assert agent.attributes["arena.task.status"] == "submitted"
    tokens = (
        agent.attributes["gen_ai.usage.input_tokens"],
        agent.attributes["gen_ai.usage.output_tokens"],
    )
    assert tokens == llm.usage_totals == (done["tokens_in"], done["tokens_out"])

    chats = [s for s in trace if s.name.startswith("chat ")]
    assert len(chats) == len(llm.requests) == 3
    for chat, reply in zip(chats, llm.replies, strict=True):  # sent one after another
        assert chat.name == "chat fake-model" and chat.kind == CLIENT_KIND
        assert chat.parent_span_id == agent.span_id
        a = chat.attributes
        assert (a["gen_ai.operation.name"], a["gen_ai.provider.name"]) == ("chat", "openai")
        assert (a["gen_ai.request.model"], a["gen_ai.response.model"]) == ("fake-model",) * 2
        assert a["server.address"] == "127.0.0.1" and a["server.port"] == llm.port
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (
            reply.prompt_tokens,
            reply.completion_tokens,
        )
        assert a["gen_ai.response.finish_reasons"] == ["tool_calls"]

    tools = [s for s in trace if s.name.startswith("execute_tool ")]
    assert len(tools) == len(done["commands"])  # one span per command green served
    names = [s.attributes["gen_ai.tool.name"] for s in tools]
    assert set(names) == {"run_bash_cmd", "show_file", "submit_localization"}
    for span in tools:
        assert span.parent_span_id == agent.span_id
        assert span.name == f"execute_tool {span.attributes['gen_ai.tool.name']}"
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.call.id"].startswith("call_")
        assert span.attributes["arena.command.exit_code"] == 0
    call_ids = {s.attributes["gen_ai.tool.call.id"] for s in tools}
    assert len(call_ids) == 3  # each model call named by its own id

    # one trace per task: no other span (the A2A SDK's own, per request) reached the collector
    every = otlp.received()
    assert {s.trace_id for s in every} == {task.trace_id}
    assert {s.name.split()[0] for s in every} == {
        "arena.task",
        "invoke_agent",
        "chat",
        "execute_tool",
    }
    assert len({s.trace_id for s in trace}) == 1 and {s.service for s in trace} == {
        "arena-green",
        "arena-purple",
    }
    for span in trace:  # content was not asked for: nothing of it left the services
        assert not CONTENT_KEYS & set(span.attributes), span.name
        text = json.dumps(span.attributes)
        assert "AddressSanitizer" not in text and "head -20" not in text, span.name


def test_content_is_recorded_when_asked_for(otlp, start_green, llm, llm_purple, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    _done, trace = _run_task(start_green, llm, llm_purple, otlp)

    chats = [s for s in trace if s.name.startswith("chat ")]
    prompt = json.loads(chats[0].attributes["gen_ai.input.messages"])
    assert [m["role"] for m in prompt] == ["system", "user"]
    later = json.loads(chats[1].attributes["gen_ai.input.messages"])
    said = json.loads(chats[0].attributes["gen_ai.output.messages"])
    assert said[0]["finish_reason"] == "tool_calls"
    call = next(p for p in said[0]["parts"] if p["type"] == "tool_call")
    assert call["name"] == "run_bash_cmd" and call["id"].startswith("call_")
    answer = next(p for m in later for p in m["parts"] if p["type"] == "tool_call_response")
    assert answer["id"] == call["id"] and "AddressSanitizer" in answer["response"]

    bash = next(s for s in trace if s.name == "execute_tool run_bash_cmd")
    assert bash.attributes["gen_ai.tool.call.arguments"] == "head -20 /workspace/error.txt"
    assert "AddressSanitizer" in bash.attributes["gen_ai.tool.call.result"]


def test_a_policy_without_a_model_traces_its_commands_too(otlp, analyst_url, start_green):
    green = start_green(purple_url=analyst_url)
    task = submit_task(green.url, {"task": "arvo:900001"})
    done = wait_terminal(green.url, task["id"])
    commands = web.get(f"{green.url}/tasks/{task['id']}/commands", headers=OPERATOR).json()
    spans = otlp.wait_for(lambda spans: any(s.name == "arena.task" for s in spans))
    trace = [s for s in spans if s.trace_id == _trace_of(spans, task["id"])]

    agent = _one(trace, "invoke_agent")
    assert agent.parent_span_id == _one(trace, "arena.task").span_id
    assert "gen_ai.request.model" not in agent.attributes  # the analyst asks no model
    assert not [s for s in trace if s.name.startswith("chat ")]
    tools = [s for s in trace if s.name.startswith("execute_tool ")]
    assert commands and len(tools) == len(commands), done["status"]
    assert {s.attributes["gen_ai.tool.name"] for s in tools} == {"execute"}
    assert all("gen_ai.tool.call.id" not in s.attributes for s in tools)
    assert all(s.parent_span_id == agent.span_id for s in tools)
