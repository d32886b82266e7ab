"""Bring your own agent: mini-swe-agent (its DefaultAgent, its litellm LLM layer) runs as a purple
through services/byoa against real green, driven by the local OpenAI-compatible test server;
``arena run`` completes a fixture task and the agent's tokens are in green's record."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from fixtures.catalog import REPO_ROOT
from services.arena.app import app as arena
from services.byoa.green_shell import GreenShell
from services.byoa.server import create_app
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN, submit_task, wait_terminal
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.parallel import once_per_run
from tests.support.servers import free_port, serve

pytestmark = pytest.mark.docker
MINI = "mini-swe-agent==2.4.6"
RECIPE = [
    line
    for line in (REPO_ROOT / "docs" / "own-agent.md").read_text().splitlines()
    if line.startswith(("uv venv ", "uv export ", "uv pip install "))
]
"""The install lines of docs/own-agent.md's mini-swe-agent recipe: the test builds with them."""
LOC = {
    "reasoning": "the entity decoder reads past the end",
    "locations": [
        {
            "file": "src/entity.c",
            "function": "xml_decode_entity",
            "line_start": 1,
            "line_end": 3,
            "description": "reads past the end of the entity",
        }
    ],
}


def test_the_recipe_installs_beside_the_project_not_into_it() -> None:
    """Installed into the project's .venv, mini-swe-agent changed two of its packages, which the
    next ``uv run --frozen`` put back; and ``python -m`` needs that environment's python."""
    assert len(RECIPE) == 3 and MINI in RECIPE[2], RECIPE
    assert all("build/venv-msa" in line for line in RECIPE), RECIPE
    doc = (REPO_ROOT / "docs" / "own-agent.md").read_text()
    assert "build/venv-msa/bin/python -m services.byoa.minisweagent" in doc
    assert "--max-tokens" in doc


@pytest.fixture(scope="session")
def mini_python() -> Path:
    """An environment with mini-swe-agent (litellm is large: not a project dependency) and the
    project's locked dependencies; the adapter runs there with the repository on PYTHONPATH."""
    venv = REPO_ROOT / "build" / "venv-msa"
    python, marker = venv / "bin" / "python", venv / ".installed"

    def build() -> Path:
        if not (marker.exists() and marker.read_text() == MINI):
            assert MINI in "\n".join(RECIPE), RECIPE
            for line in RECIPE:  # as docs/own-agent.md says, from the repository's folder
                subprocess.run(["bash", "-e", "-c", line], cwd=REPO_ROOT, check=True)
            marker.write_text(MINI)
        return python

    return once_per_run("venv-msa", build, lambda: None)  # workers in turn: each checks


def bash(command: str, tokens_in: int, tokens_out: int) -> FakeReply:
    return FakeReply(
        content="Next step.",
        tool_calls=[("bash", {"command": command})],
        prompt_tokens=tokens_in,
        completion_tokens=tokens_out,
    )


def test_arena_runs_mini_swe_agent_as_purple(
    mini_python, start_green, llm, tmp_path, monkeypatch
) -> None:
    write = f"mkdir -p /workspace/shared && cat > /workspace/shared/loc.json <<'EOF'\n{json.dumps(LOC)}\nEOF"
    llm.push(
        bash("head -3 /workspace/error.txt", 1200, 40),
        bash("grep -n xml_decode_entity -r /workspace/src-vul | head", 1500, 35),
        bash(write, 1900, 120),
        bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", 2100, 15),
    )
    port = free_port()
    log = (tmp_path / "mini.log").open("wb")
    adapter = subprocess.Popen(
        [
            str(mini_python),
            "-m",
            "services.byoa.minisweagent",
            "--port",
            str(port),
            "--model",
            "openai/fake-model",
            "--base-url",
            llm.base_url,
            "--api-key",
            "test",
            "--step-limit",
            "8",
            "--max-tokens",
            "2048",
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "MSWEA_SILENT_STARTUP": "1"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if web.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert adapter.poll() is None, (tmp_path / "mini.log").read_text()[-3000:]
            time.sleep(0.2)
        green = start_green(purple_url=url)
        monkeypatch.setenv("ARENA_API_TOKEN", OPERATOR_TOKEN)
        out = tmp_path / "results"
        res = CliRunner().invoke(
            arena,
            [
                *("run", "arvo:900001", "--green", green.url, "--purple", url),
                *("--out", str(out), "--run", "mini", "--poll-interval", "0.2"),
            ],
            catch_exceptions=False,
        )
        assert res.exit_code == 0, res.output
    finally:
        adapter.terminate()
        adapter.wait(timeout=20)
    (task,) = json.loads((out / "mini" / "results.json").read_text())["tasks"]
    assert task["status"] == "completed", (task, (tmp_path / "mini.log").read_text()[-3000:])
    assert task["scores"]["file@1"] == 1.0
    assert (task["tokens_in"], task["tokens_out"]) == llm.usage_totals == (6700, 210)
    record = web.get(f"{green.url}/tasks/{task['task_id']}", headers=OPERATOR).json()
    assert (record["tokens_in"], record["tokens_out"]) == (6700, 210)
    assert "mini-swe-agent ended: Submitted" in (record["agent_reason"] or "")
    assert llm.requests[0]["tools"][0]["function"]["name"] == "bash"  # its own LLM layer
    assert {r.get("max_tokens") for r in llm.requests} == {2048}  # the recipe's --max-tokens


def test_a_foreign_agent_that_crashes_says_why_in_greens_record(start_green) -> None:
    def run(text: str, shell: GreenShell) -> str:
        shell.execute("true")
        shell.add_usage(300, 12)
        raise ValueError("my agent broke")

    port = free_port()
    with serve(create_app(run, name="crashing", url=f"http://127.0.0.1:{port}"), port) as srv:
        green = start_green(purple_url=srv.url)
        done = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert done["end_reason"] == "purple_failed" and done["failure_kind"] == "agent"
    assert done["agent_reason"] == "ValueError: my agent broke"
    assert (done["tokens_in"], done["tokens_out"]) == (300, 12)
