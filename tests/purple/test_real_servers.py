"""What a real model server needs from purple (issue: the agent on real model servers), against
the local OpenAI-compatible test server: a context window that fits, a context overflow that
compacts and retries once, request settings from the environment and the config file, expected
errors logged as one line, and a readiness check of the model endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import ReactAgent
from services.purple.app import create_app
from services.purple.config import PurpleSettings
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.purple.policies import build_policy
from services.purple.protocols import TaskContext
from services.shared.protocol import MODEL_EXTENSION
from tests.support import web
from tests.support.fake_llm import FakeError, FakeLLMServer, FakeReply
from tests.support.local_env import LocalShellEnvironment, make_workspace
from tests.support.servers import free_port, serve

LOC = [{"file": "lib/a.c", "function": "f", "line_start": 2, "line_end": 3, "description": "d"}]


@pytest.fixture
def llm():
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def task(tmp_path: Path) -> TaskContext:
    paths = make_workspace(
        tmp_path / "ws",
        project="proj",
        files={"lib/a.c": "int f(void)\n{\n  return 1;\n}\n"},
        error_txt="==1==ERROR: AddressSanitizer: SEGV\n",
    )
    return TaskContext(
        task_id="t-1",
        description="Find the root cause.",
        env=LocalShellEnvironment(paths),
        paths=paths,
    )


def agent(server: FakeLLMServer, traj: Path, /, **cfg) -> ReactAgent:
    model = OpenAIChatModel(
        OpenAIModelConfig(model="m", base_url=server.base_url, api_key="k", max_retries=0)
    )
    return ReactAgent(model, AgentConfig(**cfg), trajectory_dir=traj)


def events(traj: Path) -> list[dict]:
    (path,) = traj.glob("*.events.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def bash(command: str, tokens_in: int = 300) -> FakeReply:
    return FakeReply(tool_calls=[("run_bash_cmd", {"command": command})], prompt_tokens=tokens_in)


SUBMIT = FakeReply(tool_calls=[("submit_localization", {"locations": LOC, "reasoning": "r"})])


async def test_a_context_overflow_compacts_and_retries_once(llm, task, tmp_path) -> None:
    llm.push(
        *(bash(f"echo step{i}; head -c 2000 /dev/zero | tr '\\0' x") for i in range(4)),
        FakeError(400, "Requested tokens (5000) exceed context window of 4096", type="x"),
        SUBMIT,
    )
    result = await agent(llm, tmp_path / "traj", keep_last_turns=1).run(task)
    assert result.status == "submitted", result.reason
    overflowed, retried = llm.requests[4], llm.requests[5]
    assert len(retried["messages"]) < len(overflowed["messages"])  # compacted before the retry
    kinds = [e["type"] for e in events(tmp_path / "traj")]
    assert kinds.count("context_retry") == 1 and "compaction" in kinds
    window = next(e for e in events(tmp_path / "traj") if e["type"] == "context_window")
    assert window["window"] == 4096 and window["budget"] < 4096


async def test_an_overflow_that_compaction_cannot_fix_is_the_agents_failure(
    llm, task, tmp_path
) -> None:
    llm.push(FakeError(400, "too long", code="context_length_exceeded"))
    result = await agent(llm, tmp_path / "traj").run(task)
    assert result.status == "error" and "context_length_exceeded" in result.reason
    assert "nothing left to compact" in result.reason and len(llm.requests) == 1


async def test_the_budget_follows_the_window_the_server_tells(llm, task, tmp_path) -> None:
    llm.n_ctx = 2048  # llama.cpp's /props
    llm.push(SUBMIT)
    await agent(llm, tmp_path / "traj").run(task)
    window = next(e for e in events(tmp_path / "traj") if e["type"] == "context_window")
    assert (window["window"], window["source"]) == (2048, "server")
    assert window["budget"] == int((2048 - 2048 // 8) * 0.9)


async def test_the_configured_window_wins_and_max_tokens_is_reserved(llm, task, tmp_path) -> None:
    llm.n_ctx = 32768
    llm.push(SUBMIT)
    await agent(llm, tmp_path / "traj", context_window=8192, llm={"max_tokens": 1024}).run(task)
    window = next(e for e in events(tmp_path / "traj") if e["type"] == "context_window")
    assert (window["window"], window["source"], window["budget"]) == (
        8192,
        "config",
        int((8192 - 1024) * 0.9),
    )


def test_request_settings_come_from_the_environment_over_the_config_file(
    tmp_path, monkeypatch
) -> None:
    config = tmp_path / "agent.toml"
    config.write_text('[llm]\nmax_tokens = 256\ntemperature = 0.2\nstop = ["</s>"]\n')
    monkeypatch.setenv("PURPLE_AGENT_CONFIG", str(config))
    monkeypatch.setenv("PURPLE_MAX_TOKENS", "128")
    monkeypatch.setenv("PURPLE_TOP_P", "0.9")
    monkeypatch.setenv("PURPLE_SEED", "7")
    monkeypatch.setenv("PURPLE_EXTRA_BODY", '{"top_k": 20}')
    monkeypatch.setenv("PURPLE_CONTEXT_WINDOW", "4096")
    settings = PurpleSettings(policy="react", openai_api_key="k", _env_file=None)
    react = build_policy(settings)
    assert isinstance(react, ReactAgent)
    sent = react.llm.config  # type: ignore[attr-defined]
    assert (sent.max_tokens, sent.temperature, sent.stop, sent.top_p, sent.seed) == (
        128,
        0.2,
        ["</s>"],
        0.9,
        7,
    )
    assert sent.extra_body == {"top_k": 20} and react.config.context_window == 4096


async def test_request_settings_are_in_the_trajectory_and_the_card(llm, task, tmp_path) -> None:
    llm.push(SUBMIT)
    await agent(llm, tmp_path / "traj", llm={"max_tokens": 64, "seed": 3}).run(task)
    start = next(e for e in events(tmp_path / "traj") if e["type"] == "start")
    assert start["config"]["llm"]["max_tokens"] == 64 and start["config"]["llm"]["seed"] == 3
    port = free_port()
    settings = PurpleSettings(
        port=port,
        policy="react",
        openai_api_key="k",
        openai_base_url=llm.base_url,
        max_tokens=64,
        stop=["</s>"],
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "t2",
    )
    with serve(create_app(settings), port) as srv:
        card = web.get(f"{srv.url}/.well-known/agent-card.json").json()
    (ext,) = [e for e in card["capabilities"]["extensions"] if e["uri"] == MODEL_EXTENSION]
    assert ext["params"]["max_tokens"] == 64 and ext["params"]["stop"] == ["</s>"]
    assert "k" not in json.dumps(ext["params"]).replace('"', " ").split()  # no key


async def test_an_expected_model_error_is_one_log_line(llm, task, tmp_path) -> None:
    llm.push(FakeError(404, "The model `x` does not exist.", type="NotFoundError"))
    with capture_logs() as logs:
        result = await agent(llm, tmp_path / "traj").run(task)
    assert result.status == "error" and "does not exist" in result.reason
    failed = [e for e in logs if "agent run failed" in e["event"]]
    assert len(failed) == 1 and failed[0]["log_level"] == "warning"
    assert "exc_info" not in failed[0] and "does not exist" in failed[0]["error"]


def test_readyz_checks_the_model_endpoint_and_the_model_name(llm, tmp_path) -> None:
    def purple(base_url: str):
        port = free_port()
        settings = PurpleSettings(
            port=port,
            policy="react",
            model="fake-model",
            openai_api_key="k",
            openai_base_url=base_url,
            log_dir=tmp_path / "logs",
            trajectory_dir=tmp_path / "traj",
        )
        return serve(create_app(settings), port)

    llm.models = ["some-other-model"]
    with purple(llm.base_url) as srv:
        ready = web.get(f"{srv.url}/readyz")
        health = web.get(f"{srv.url}/healthz").json()
    assert ready.status_code == 503 and "does not serve model 'fake-model'" in ready.text
    assert health["status"] == "degraded"
    llm.models = ["fake-model"]
    with purple(llm.base_url) as srv:
        assert web.get(f"{srv.url}/readyz").status_code == 200
    with purple(f"http://127.0.0.1:{free_port()}/v1") as srv:  # nothing listens there
        down = web.get(f"{srv.url}/readyz")
    assert down.status_code == 503 and "unreachable" in down.json()["model"]["error"]
