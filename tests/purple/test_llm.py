"""OpenAIChatModel against the real local fake OpenAI server: replies, usage, cost, retries."""

import time

import pytest
import structlog

from services.purple.llm import pricing
from services.purple.llm.base import ContextOverflow, LLMError
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.purple.llm.pricing import cost_of, lookup_price
from tests.support.fake_llm import FakeError, FakeLLMServer, FakeReply

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_bash_cmd",
            "description": "d",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


def model(server: FakeLLMServer, name: str = "gpt-4o-mini", **kw) -> OpenAIChatModel:
    kw.setdefault("backoff_initial_s", 0.01)
    kw.setdefault("backoff_max_s", 0.05)
    return OpenAIChatModel(
        OpenAIModelConfig(model=name, base_url=server.base_url, api_key="k", **kw)
    )


async def test_text_reply_usage_and_cost(server) -> None:
    server.push(FakeReply(content="hello", prompt_tokens=1000, completion_tokens=200))
    reply = await model(server, temperature=0.0, max_tokens=50).query(MESSAGES)
    assert reply.content == "hello" and reply.tool_calls == []
    assert (reply.tokens_in, reply.tokens_out) == (1000, 200)
    assert reply.cost == pytest.approx((1000 * 0.15 + 200 * 0.60) / 1e6)
    sent = server.requests[0]
    assert sent["model"] == "gpt-4o-mini" and sent["messages"] == MESSAGES
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 50 and "tools" not in sent


async def test_tool_call_reply(server) -> None:
    server.push(FakeReply(tool_calls=[("run_bash_cmd", {"command": "ls"}), ("show_file", "{bad")]))
    reply = await model(server).query(MESSAGES, TOOLS)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("run_bash_cmd", '{"command": "ls"}'),
        ("show_file", "{bad"),
    ]
    assert reply.tool_calls[0].id.startswith("call_") and reply.finish_reason == "tool_calls"
    assert server.requests[0]["tools"] == TOOLS
    assert reply.assistant_message()["tool_calls"][0]["function"]["name"] == "run_bash_cmd"


async def test_reported_cost_wins_over_the_price_table(server) -> None:
    server.push(FakeReply(content="x", cost=0.0123))
    reply = await model(server).query(MESSAGES)
    assert (reply.cost, reply.cost_source) == (0.0123, "server")


async def test_what_the_server_did_not_report_is_marked_not_made_up(server) -> None:
    """Cached tokens and reasoning only when the server sent them; an answer without usage is
    marked unmeasured; a cost is the server's, the price table's, or of no known source."""
    server.push(
        FakeReply(content="a", cached_tokens=512, reasoning="think first"),
        FakeReply(content="b", usage=False),
    )
    m = model(server)
    first, second = await m.query(MESSAGES), await m.query(MESSAGES)
    assert (first.cached_tokens, first.reasoning, first.usage_reported) == (
        512,
        "think first",
        True,
    )
    assert first.cost_source == "prices"
    assert (second.cached_tokens, second.reasoning, second.usage_reported) == (None, None, False)
    assert (second.tokens_in, second.tokens_out) == (0, 0)
    assert "think first" not in str(first.assistant_message())  # never sent back to the model


async def test_transient_errors_are_retried(server) -> None:
    server.push(
        FakeError(500),
        FakeError(429, headers={"retry-after": "0"}),
        FakeError(503),
        FakeReply(content="finally"),
    )
    reply = await model(server).query(MESSAGES)
    assert reply.content == "finally" and len(server.requests) == 4 and server.errors_sent == 3


async def test_retry_after_is_honoured_and_capped(server) -> None:
    server.push(FakeError(429, headers={"retry-after": "30"}), FakeReply(content="ok"))
    start = time.monotonic()
    assert (await model(server, backoff_max_s=0.2).query(MESSAGES)).content == "ok"
    assert 0.15 < time.monotonic() - start < 5


async def test_a_timed_out_request_is_not_sent_again(server) -> None:
    """A busy one-slot server keeps generating an abandoned reply: a copy would queue behind it."""
    server.push(FakeReply(content="late", delay_s=1.0), FakeReply(content="quick"))
    with pytest.raises(LLMError, match=r"did not answer within 0.3 s; not sent again"):
        await model(server, timeout_s=0.3).query(MESSAGES)
    assert len(server.requests) == 1


async def test_timeouts_are_retried_only_when_allowed_and_the_retry_is_recorded(server) -> None:
    server.push(FakeReply(content="late", delay_s=1.0), FakeReply(content="quick"))
    reply = await model(server, timeout_s=0.3, timeout_retries=1).query(MESSAGES)
    assert reply.content == "quick" and len(server.requests) == 2
    assert len(reply.retries) == 1 and "APITimeoutError" in reply.retries[0]


async def test_context_overflow_is_its_own_error_with_the_window(server) -> None:
    server.push(
        FakeError(400, "Requested tokens (2300) exceed context window of 2048", type="x"),
        FakeError(400, "too long", code="context_length_exceeded"),
    )
    with pytest.raises(ContextOverflow) as first:
        await model(server).query(MESSAGES)
    assert first.value.window == 2048 and "context_length_exceeded" in str(first.value)
    with pytest.raises(ContextOverflow) as second:
        await model(server).query(MESSAGES)
    assert second.value.window is None


async def test_sampling_settings_are_sent(server) -> None:
    server.push(FakeReply(content="x"))
    m = model(server, top_p=0.9, seed=7, stop=["</s>"], max_tokens=64, extra_body={"top_k": 20})
    await m.query(MESSAGES)
    sent = server.requests[0]
    assert (sent["top_p"], sent["seed"], sent["stop"], sent["max_tokens"]) == (
        0.9,
        7,
        ["</s>"],
        64,
    )
    assert sent["top_k"] == 20


async def test_non_transient_error_fails_at_once(server) -> None:
    server.push(FakeError(400, "bad request"), FakeReply(content="never"))
    with pytest.raises(LLMError, match="BadRequestError"):
        await model(server).query(MESSAGES)
    assert len(server.requests) == 1


async def test_retries_give_up(server) -> None:
    server.default = FakeError(502)
    with pytest.raises(LLMError, match="gave up after 3 attempts"):
        await model(server, max_retries=2).query(MESSAGES)
    assert len(server.requests) == 3


async def test_connection_errors_are_retried_then_reported() -> None:
    m = OpenAIChatModel(
        OpenAIModelConfig(
            model="m", base_url="http://127.0.0.1:9/v1", max_retries=1, backoff_initial_s=0.01
        )
    )
    with pytest.raises(LLMError, match="APIConnectionError"):
        await m.query(MESSAGES)


async def test_unknown_model_costs_zero_and_warns_once(server) -> None:
    pricing._warned.discard("my-local-model")
    server.push(FakeReply(content="a"), FakeReply(content="b"))
    m = model(server, name="my-local-model")
    with structlog.testing.capture_logs() as logs:
        assert (await m.query(MESSAGES)).cost == 0.0
        reply = await m.query(MESSAGES)
        assert (reply.cost, reply.cost_source) == (0.0, None)
    assert [entry["event"] for entry in logs].count("unknown model price; counting cost as 0") == 1


def test_price_lookup() -> None:
    assert lookup_price("gpt-4o") == (2.50, 10.00)
    assert lookup_price("gpt-4o-mini-2024-07-18") == (0.15, 0.60)
    assert lookup_price("gpt-4o-2024-08-06") == (2.50, 10.00)
    assert lookup_price("openai/gpt-4.1-mini") == (0.40, 1.60)
    assert lookup_price("qwen-coder", {"qwen-coder": (0.1, 0.2)}) == (0.1, 0.2)
    assert lookup_price("totally-unknown") is None
    assert cost_of("gpt-4o", 1_000_000, 1_000_000) == pytest.approx(12.5)


def test_serialize_hides_the_key() -> None:
    m = OpenAIChatModel(OpenAIModelConfig(model="m", api_key="sk-secret"))
    assert "sk-secret" not in str(m.serialize()) and m.serialize()["model"] == "m"


@pytest.mark.parametrize(
    "name", ["gpt-4o-search-preview", "gpt-5-search-api", "openai/gpt-4o:online"]
)
def test_a_model_that_searches_the_web_is_refused(name) -> None:
    with pytest.raises(ValueError, match="hosted tools are refused"):
        OpenAIModelConfig(model=name)


@pytest.mark.parametrize(
    "body", [{"web_search_options": {}}, {"plugins": [{"id": "web"}]}, {"tools": []}]
)
def test_request_fields_that_enable_a_hosted_tool_are_refused(body) -> None:
    with pytest.raises(ValueError, match="hosted tools are refused"):
        OpenAIModelConfig(model="gpt-4o-mini", extra_body={"top_k": 20, **body})
