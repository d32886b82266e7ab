"""A purple restarted at the same URL with other settings is recorded as it is: green reads
purple's card for every task, so the next task's provenance names the new policy, model seed and
temperature (a card cached for green's life named the first purple for good)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.helpers import submit_task, wait_terminal
from tests.support.fake_llm import FakeLLMServer, FakeReply
from tests.support.servers import ServiceProcess, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow]

RIGHT = [{"file": "src/entity.c", "function": "xml_decode_entity", "line_start": 1, "line_end": 3}]


def _purple(tmp_path: Path, port: int, name: str, **env: str) -> ServiceProcess:
    base = {
        "PURPLE_LOG_DIR": str(tmp_path / "logs"),
        "PURPLE_TRAJECTORY_DIR": str(tmp_path / f"traj-{name}"),
    }
    return ServiceProcess("services.purple", port, base | env, tmp_path / f"purple-{name}.out")


def _one_task(green_url: str, purple: ServiceProcess) -> dict:
    purple.start()
    try:
        task = wait_terminal(green_url, submit_task(green_url, {"task": "arvo:900001"})["id"])
    finally:
        purple.stop()
    assert task["status"] == "completed", task
    return task["provenance"]["purple"]


def test_a_purple_restarted_with_other_settings_is_recorded_as_it_is(tmp_path, start_green):
    port = free_port()  # one URL for the three purples, one after the other
    green = start_green(purple_url=f"http://127.0.0.1:{port}")
    answer = {"locations": RIGHT, "reasoning": "the bound check"}
    submit = FakeReply(tool_calls=[("submit_localization", answer)])
    with FakeLLMServer(default=submit) as llm:
        react = {
            "PURPLE_POLICY": "react",
            "PURPLE_MODEL": "fake-model",
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": "test",
            "PURPLE_TEMPERATURE": "0.3",
        }
        analyst = _one_task(green.url, _purple(tmp_path, port, "a", PURPLE_POLICY="stacktrace"))
        seed7 = _one_task(green.url, _purple(tmp_path, port, "b", PURPLE_SEED="7", **react))
        seed8 = _one_task(green.url, _purple(tmp_path, port, "c", PURPLE_SEED="8", **react))

    assert analyst["model"] is None  # the offline analyst has no model
    assert seed7["model"] is not None, "the card of the purple that ran before was recorded"
    assert seed7["model"]["model"] == "fake-model"
    assert (seed7["model"]["seed"], seed7["model"]["temperature"]) == (7, 0.3)
    assert seed8["model"]["seed"] == 8  # only the seed changed: still seen
    assert analyst["agent"]["policy"] == "stack-trace-analyst"
    assert seed7["agent"]["policy"] == seed8["agent"]["policy"] == "react"
    assert seed7["agent"]["agent_config"]["sha256"] != seed8["agent"]["agent_config"]["sha256"]
    assert {p["url"] for p in (analyst, seed7, seed8)} == {f"http://127.0.0.1:{port}"}
    assert seed8["agent"]["build"]["version"] and "lock_sha256" in seed8["agent"]["build"]
