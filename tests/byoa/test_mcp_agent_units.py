"""The MCP adapter's pieces that need no green: the usage an agent prints, the command line's
placeholders, the environment and the MCP configuration it gets."""

from __future__ import annotations

import json

from services.byoa.mcp_agent import agent_env, command_line, mcp_config, printed_usage
from services.shared.protocol import Usage


def test_the_usage_claude_codex_and_gemini_print_is_read() -> None:
    claude = json.dumps(
        {"type": "result", "usage": {"input_tokens": 10, "output_tokens": 3}, "total_cost_usd": 0.5}
    )
    assert printed_usage(claude) == Usage(tokens_in=10, tokens_out=3, cost=0.5)
    codex = "\n".join(
        [
            '{"type": "thread.started"}',
            '{"type": "turn.completed", "usage": {"input_tokens": 7, "output_tokens": 2}}',
            "some text",
        ]
    )
    assert printed_usage(codex) == Usage(tokens_in=7, tokens_out=2)
    gemini = json.dumps({"response": "x", "stats": {"inputTokens": 5, "outputTokens": 1}})
    assert printed_usage(gemini) == Usage(tokens_in=5, tokens_out=1)


def test_no_usage_or_a_bad_one_is_none() -> None:
    assert printed_usage("done, no json here") is None
    assert printed_usage('{"usage": {"input_tokens": -5}}') is None  # not a count
    assert printed_usage('{"usage": {"input_tokens": "many"}}') is None


def test_placeholders_fill_words_and_never_split_them() -> None:
    prompt = "fix it; rm -rf / $(whoami) {mcp_config}"
    argv = command_line(
        ["agent", "-p", "{prompt}", "--cfg={mcp_config}"],
        {"prompt": prompt, "mcp_config": "/t/m.json"},
    )
    assert argv[:2] == ["agent", "-p"] and argv[3] == "--cfg=/t/m.json"
    assert argv[2].startswith("fix it; rm -rf / $(whoami)"), argv  # one word, no shell


def test_the_agent_gets_the_mcp_address_and_nothing_of_green_s(monkeypatch) -> None:
    monkeypatch.setenv("GREEN_API_TOKEN", "secret")
    monkeypatch.setenv("ARENA_SOMETHING", "x")
    env = agent_env("http://g/mcp", "tok")
    assert "GREEN_API_TOKEN" not in env and "ARENA_SOMETHING" not in env
    assert env["ARENA_MCP_URL"] == "http://g/mcp" and env["ARENA_MCP_TOKEN"] == "tok"
    server = mcp_config("http://g/mcp", "tok")["mcpServers"]["arena"]
    assert server == {
        "type": "http",
        "url": "http://g/mcp",
        "headers": {"Authorization": "Bearer tok"},
    }
