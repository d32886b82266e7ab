"""Provenance carries what purple reports of itself: the params of its card's agent and model
extensions, read from a real card served by purple's app, and never a key or a URL; a hostile
card is read within bounds."""

from __future__ import annotations

import json

from fastapi import FastAPI
from fastapi.responses import Response

from services.green.tasks import provenance
from services.purple.app import create_app
from services.purple.config import PurpleSettings
from services.shared.build_info import build_info
from services.shared.protocol import MODEL_EXTENSION
from tests.support.fake_llm import FakeLLMServer
from tests.support.servers import free_port, serve

SECRET = "sk-provenance-secret-123"


def _settings(tmp_path, **kw) -> PurpleSettings:
    port = free_port()
    return PurpleSettings(
        port=port,
        log_dir=tmp_path / f"logs{port}",
        trajectory_dir=tmp_path / f"t{port}",
        **kw,
    )


async def test_llm_purples_model_settings_and_limits_reach_the_provenance(tmp_path) -> None:
    assert provenance.MODEL_EXTENSION == MODEL_EXTENSION
    with FakeLLMServer() as llm:
        base = llm.base_url.replace("http://", "http://user:pw-in-url@")
        settings = _settings(
            tmp_path,
            policy="react",
            model="fake-model-7b",
            openai_api_key=SECRET,
            openai_base_url=base,
            temperature=0.2,
            top_p=0.9,
            seed=7,
            max_tokens=128,
            context_window=8192,
            step_limit=12,
            cost_limit=0.5,
            extra_body={"top_k": 20, "api_key": SECRET},
        )
        with serve(create_app(settings), settings.port) as srv:
            card = await provenance.purple_card(srv.url)
    model, agent = card["model"], card["agent"]
    assert agent["policy"] == "react" and agent["agent_config"]["file"] is None
    assert len(agent["agent_config"]["sha256"]) == 64
    assert agent["build"] == build_info()  # version, commit, dirty, lock sha256, Python...
    assert model["model"] == "fake-model-7b"
    assert (model["temperature"], model["top_p"], model["seed"]) == (0.2, 0.9, 7)
    assert model["max_tokens"] == 128 and model["context_window"] == 8192
    assert model["limits"]["step_limit"] == 12 and model["limits"]["cost_limit"] == 0.5
    assert model["extra_body"] == {"top_k": 20}
    text = json.dumps(card)
    assert SECRET not in text and "pw-in-url" not in text and llm.base_url not in text


async def test_the_analyst_reports_no_model(tmp_path) -> None:
    settings = _settings(tmp_path, policy="stacktrace")
    with serve(create_app(settings), settings.port) as srv:
        card = await provenance.purple_card(srv.url)
    assert card["name"] and card["model"] is None and "error" not in card
    assert card["agent"]["policy"] == "stack-trace-analyst"
    assert card["agent"]["agent_config"] is None and card["agent"]["build"]["version"]


def _card_server(body: bytes, status: int = 200) -> FastAPI:
    app = FastAPI()

    @app.get("/.well-known/agent-card.json")
    async def card() -> Response:
        return Response(body, status_code=status, media_type="application/json")

    return app


async def test_a_hostile_card_is_read_within_bounds_and_recorded_as_its_error() -> None:
    huge = b'{"name": "' + b"x" * (provenance.CARD_MAX_BYTES + 1) + b'"}'
    deep = b"[" * 30_000 + b"]" * 30_000  # under the size bound, past any parser's depth
    odd = json.dumps({"name": {"not": "text"}, "version": 7, "description": "d" * 5000})
    cases = [(huge, "BodyTooLarge"), (deep, "RecursionError"), (b"[1, 2]", "ValueError")]
    for body, error in cases:
        port = free_port()
        with serve(_card_server(body), port) as srv:
            card = await provenance.purple_card(srv.url)
        assert card == {"url": srv.url, "error": f"agent card unreadable: {error}"}
    port = free_port()
    with serve(_card_server(odd.encode()), port) as srv:
        card = await provenance.purple_card(srv.url)
    assert card["name"] is None and card["version"] is None  # not text: not recorded
    assert len(card["description"]) == provenance.TEXT_MAX
    assert card["agent"] is None and card["model"] is None


def test_a_card_that_puts_secrets_in_its_params_loses_them() -> None:
    card = {
        "capabilities": {
            "extensions": [
                {"uri": "urn:other", "params": {"model": "not-this"}},
                {
                    "uri": MODEL_EXTENSION,
                    "params": {
                        "model": "m",
                        "api_key": "k1",
                        "base_url": "http://h/v1",
                        "Authorization": "Bearer k2",
                        "note": "see https://user:pw@host/",
                        "nested": {"access_token": "k3", "temperature": 0.1},
                        "stop": ["</s>", "http://x"],
                    },
                },
            ]
        }
    }
    assert provenance.model_of(card) == {
        "model": "m",
        "note": None,
        "nested": {"temperature": 0.1},
        "stop": ["</s>"],
    }
    assert provenance.model_of({"capabilities": {}}) is None
