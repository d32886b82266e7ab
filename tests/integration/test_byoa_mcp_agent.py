"""Any MCP coding agent as a purple: services/byoa/mcp_agent runs a scripted MCP client
(tests/support/scripted_mcp_agent.py, the official MCP client) as its agent command on a locate,
a reproduce and a fix task through green; the agent's printed usage reaches green's record, its
folder holds nothing of green's, and a client that hangs is ended at the task's deadline with its
whole process group."""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from pathlib import Path

import pytest

from fixtures.catalog import REPO_ROOT
from services.byoa.mcp_agent import make_run
from services.byoa.server import create_app
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.scripted_purple import apply_patch_commands
from tests.support.servers import free_port, serve

pytestmark = pytest.mark.docker
AGENT = str(REPO_ROOT / "tests" / "support" / "scripted_mcp_agent.py")
LOC = {
    "reasoning": "the entity decoder reads past the end",
    "locations": [
        {"file": "src/entity.c", "function": "xml_decode_entity", "line_start": 1, "line_end": 3}
    ],
}


@pytest.fixture
def mcp_purple(tmp_path: Path):
    """The adapter, in this process, whose agent runs the script the test writes."""
    script = tmp_path / "script.json"
    report = tmp_path / "report.json"
    port = free_port()
    run = make_run([sys.executable, AGENT, "{mcp_config}", str(script)], "scripted-mcp")
    app = create_app(run, name="scripted-mcp", url=f"http://127.0.0.1:{port}", submits=False)

    def set_script(calls: list[dict], hang: bool = False) -> None:
        report.unlink(missing_ok=True)
        script.write_text(json.dumps({"calls": calls, "hang": hang, "report": str(report)}))

    with serve(app, port) as srv:
        yield srv.url, set_script, report


def run_task(green, ref: str, **body) -> dict:
    return wait_terminal(green.url, submit_task(green.url, {"task": ref, **body})["id"], 300)


def test_a_scripted_mcp_agent_solves_a_locate_task_and_its_usage_is_recorded(
    start_green, mcp_purple
):
    url, set_script, report = mcp_purple
    green = start_green(purple_url=url)
    set_script(
        [
            {"tool": "run_bash", "arguments": {"command": "head -3 error.txt"}},
            {"tool": "search_code", "arguments": {"pattern": "xml_decode_entity"}},
            {"tool": "submit", "arguments": LOC},
        ]
    )
    done = run_task(green, "arvo:900001")
    assert done["status"] == "completed", done
    assert done["scores"]["file@1"] == 1.0, done["scores"]
    seen = json.loads(report.read_text())
    assert seen["seen"][0]["tools"] == ["run_bash", "read_file", "search_code", "submit"]
    assert "accepted" in seen["seen"][-1]["text"], seen["seen"]
    assert seen["cwd"] == ["agent.out", "mcp.json", "prompt.md"], seen["cwd"]  # nothing else
    assert seen["env"] == ["ARENA_MCP_TOKEN", "ARENA_MCP_URL"], seen["env"]
    assert (done["tokens_in"], done["tokens_out"], done["cost"]) == (1234, 56, 0.0125), done


def test_a_scripted_mcp_agent_on_a_reproduce_and_a_fix_task(
    start_green, mcp_purple, fixture_assets
):
    url, set_script, report = mcp_purple
    green = start_green(purple_url=url, judge_fuzz_runs=300)
    poc = (fixture_assets / "900007" / "poc").read_bytes()
    set_script([{"tool": "submit", "arguments": {"input_base64": base64.b64encode(poc).decode()}}])
    reproduced = run_task(green, "arvo-poc:900007-l0")
    assert reproduced["status"] == "completed", reproduced
    assert reproduced["scores"]["reproduced"] == 1.0, reproduced["scores"]

    fix = (fixture_assets / "900002" / "patch.diff").read_text()
    calls = [{"tool": "run_bash", "arguments": {"command": c}} for c in apply_patch_commands(fix)]
    set_script([*calls, {"tool": "submit", "arguments": {}}])
    fixed = run_task(green, "arvo-fix:900002")
    seen = json.loads(report.read_text())["seen"]
    assert fixed["status"] == "completed", (fixed, seen)
    assert fixed["scores"]["resolved"] == 1.0, fixed["scores"]
    assert seen[0]["tools"] == ["run_bash", "read_file", "search_code", "submit"]


def test_an_mcp_agent_that_hangs_is_ended_at_the_task_deadline_with_its_group(
    start_green, mcp_purple
):
    url, set_script, report = mcp_purple
    green = start_green(purple_url=url)
    set_script([], hang=True)
    done = run_task(green, "arvo:900001", task_timeout_s=15)
    assert (done["status"], done["end_reason"]) == ("failed", "deadline"), done
    pids = json.loads(report.read_text())
    deadline = time.monotonic() + 30
    alive = [pids["pid"], pids["child"]]
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if _alive(p)]
        time.sleep(0.2)
    assert alive == [], f"the agent's processes outlived the task: {alive}"
    reason = web.get(f"{green.url}/tasks/{done['id']}", headers=OPERATOR).json()
    print(f"\nthe hung agent's task: {reason['end_reason']} / {reason.get('agent_reason')}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = (
        Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[-1][:1]
        if Path(f"/proc/{pid}/stat").exists()
        else "X"
    )
    return status not in ("Z", "X")
