"""The leak audit through green: a purple that copies a line of the fix into its reasoning is
flagged ``leak_suspected`` (in green's record, ``arena``'s report and the dashboard's task page);
a clean one is not; the scores are the same either way."""

from __future__ import annotations

import json

import httpx
import pytest
from markupsafe import escape
from typer.testing import CliRunner

from services.arena.app import app
from tests.integration.helpers import OPERATOR, OPERATOR_TOKEN, submit_task, wait_terminal
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.scripted_purple import Script

pytestmark = pytest.mark.docker

FIX_LINE = "if (q < end && (*q == 'x' || *q == 'X')) {"  # a line 900001's patch.diff adds
VULNERABLE = "if (*q == 'x' || *q == 'X') {"  # the line it replaces (in the agent's source)
WHERE = [{"file": "src/entity.c", "function": "xml_decode_entity", "line_start": 70,
          "line_end": 72}]  # fmt: skip
LEAKY = {"reasoning": f"The fix is `{FIX_LINE}`: the base prefix is read past the end.",
         "locations": WHERE}  # fmt: skip
CLEAN = {"reasoning": f"`{VULNERABLE}` reads q without checking it against end.",
         "locations": WHERE}  # fmt: skip


def test_a_purple_quoting_the_fix_is_flagged_and_a_clean_one_is_not(
    tmp_path, start_green, scripted_purple
):
    green = start_green(open_operator_plane=True)  # an anonymous reader too (below)
    purple, observed = scripted_purple(
        Script(commands=["sed -n 60,80p src-vul/xmlmini/src/entity.c"], per_call=[[LEAKY], [CLEAN]])
    )
    out = tmp_path / "results"
    args = ["run", "900001", "--green", green.url, "--purple", purple, "--run", "leaks"]
    args += ["--out", str(out), "--trials", "2", "--concurrency", "1", "--poll-interval", "0.2"]
    res = CliRunner().invoke(app, [*args, "--api-token", OPERATOR_TOKEN])
    assert res.exit_code == 0, res.output
    assert len(observed.task_ids) == 2

    leaky_id, clean_id = observed.task_ids
    leaky = web.get(f"{green.url}/tasks/{leaky_id}", headers=OPERATOR).json()
    clean = web.get(f"{green.url}/tasks/{clean_id}", headers=OPERATOR).json()
    assert leaky["scores"]["leak"]["suspected"] is True
    evidence = leaky["scores"]["leak"]["evidence"]
    assert f"submission: a line of the fix: {FIX_LINE}" in evidence  # loc.json's reasoning
    assert f"commands: a line of the fix: {FIX_LINE}" in evidence  # the command that wrote it
    assert "commands" in leaky["scores"]["leak"]["scanned"]
    assert clean["scores"]["leak"] == {
        **clean["scores"]["leak"],
        "suspected": False,
        "evidence": [],
    }
    metrics = ("file@1", "func@1", "line@1", "iou")
    assert [leaky["scores"][m] for m in metrics] == [clean["scores"][m] for m in metrics]

    # an anonymous reader sees neither the evidence nor that the flag was raised
    public = web.get(f"{green.url}/tasks/{leaky_id}").json()
    assert "leak" not in (public["scores"] or {}) and "scores.leak" in public["withheld"]

    run_dir = out / "leaks"
    tasks = json.loads((run_dir / "results.json").read_text())["tasks"]
    flagged = [t["trial"] for t in tasks if "leak_suspected" in t["audit"]]
    assert flagged == [1]
    report = (run_dir / "report.md").read_text()
    assert "Leak suspected in 1 attempt(s)" in report and FIX_LINE in report

    with httpx.Client(base_url=green.url, timeout=30, headers=OPERATOR) as c:
        page = c.get(f"/ui/tasks/{leaky_id}").text
        assert 'id="leak-flag"' in page and str(escape(FIX_LINE)) in page
        assert 'id="leak-flag"' not in c.get(f"/ui/tasks/{clean_id}").text


def test_the_agents_own_reasoning_in_purples_trajectory_is_scanned(llm, llm_purple, start_green):
    purple = llm_purple()
    green = start_green(purple_url=purple.url)
    thought = f"I recall the upstream fix: `{FIX_LINE}`. Let me submit the decoder."
    llm.push(
        FakeReply(
            content=thought,
            tool_calls=[("submit_localization", {"locations": WHERE, "reasoning": "the decoder"})],
        )
    )
    task = wait_terminal(green.url, submit_task(green.url, {"task": "arvo:900001"})["id"])
    assert task["status"] == "completed", task["error"]
    leak = task["scores"]["leak"]
    assert leak["suspected"] and "trajectory" in leak["scanned"]
    assert leak["evidence"] == [f"trajectory: a line of the fix: {FIX_LINE}"]
