"""Purple's /healthz tells a busy model server from a dead one, and answers within compose's
health-check timeout (4 s) either way.

A one-slot model server (llama.cpp with one slot) answers nothing, ``GET /v1/models`` included,
while it generates: purple used to wait 5 s for that listing and then report ``degraded`` (and
``/readyz`` 503) for a model that was only busy. Real HTTP: purple's app on 127.0.0.1, the fake
OpenAI-compatible server (``tests/support/fake_llm.py``) in its one-slot mode.
"""

from __future__ import annotations

import threading
from pathlib import Path

from services.purple.app import create_app
from services.purple.config import PurpleSettings
from tests.support import web
from tests.support.fake_llm import FakeLLMServer, FakeReply
from tests.support.servers import free_port, serve

COMPOSE_CHECK_S = 2.0
"""The client's whole budget for one health check (compose gives it 4 s)."""


def _purple(tmp_path: Path, base_url: str):
    port = free_port()
    settings = PurpleSettings(
        port=port,
        policy="react",
        model="fake-model",
        openai_base_url=base_url,
        openai_api_key="test",
        log_dir=tmp_path / "logs",
        trajectory_dir=tmp_path / "traj",
    )
    return serve(create_app(settings), port)


def _generate(llm: FakeLLMServer) -> threading.Thread:
    """A completion that holds the server's one slot for its delay."""
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}]}
    thread = threading.Thread(
        target=lambda: web.post(f"{llm.base_url}/chat/completions", json=body, timeout=60),
        daemon=True,
    )
    thread.start()
    return thread


def test_health_while_a_one_slot_server_generates_is_busy_not_degraded(tmp_path) -> None:
    llm = FakeLLMServer(default=FakeReply(content="thinking...", delay_s=6)).single_slot()
    llm.models = ["fake-model"]
    with llm, _purple(tmp_path, llm.base_url) as purple:
        generating = _generate(llm)
        while not llm.requests:  # the server has taken the completion: its slot is busy
            generating.join(0.05)
        health = web.get(f"{purple.url}/healthz", timeout=COMPOSE_CHECK_S).json()
        assert health["status"] == "ok", health
        assert health["model"]["busy"] is True and "busy" in health["model"]["note"]
        ready = web.get(f"{purple.url}/readyz", timeout=COMPOSE_CHECK_S)
        assert ready.status_code == 200, ready.text
        generating.join(30)


def test_health_of_a_dead_model_server_is_degraded_at_once(tmp_path) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with _purple(tmp_path, dead) as purple:
        health = web.get(f"{purple.url}/healthz", timeout=COMPOSE_CHECK_S).json()
        assert health["status"] == "degraded" and "unreachable" in health["model"]["error"]
        assert web.get(f"{purple.url}/readyz", timeout=COMPOSE_CHECK_S).status_code == 503
