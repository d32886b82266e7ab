"""The SWE-bench harness never reaches into green: what green's swebench kind uses of it loads
neither green nor purple; the runner and CLI add purple, never green."""

from __future__ import annotations

from tests.arena.test_boundaries import loaded_services


def _green(loaded: list[str]) -> list[str]:
    return [m for m in loaded if m.startswith("services.green")]


def test_what_green_uses_loads_no_purple_and_no_green():
    loaded = loaded_services("services.swebench.judge, services.swebench.instances")
    assert "services.swebench.activation" in loaded
    assert [m for m in loaded if m.startswith("services.purple")] == []
    assert _green(loaded) == []


def test_the_runner_and_cli_use_purple_but_not_green():
    loaded = loaded_services("services.swebench.cli")
    assert "services.purple.agent.loop" in loaded
    assert _green(loaded) == []
