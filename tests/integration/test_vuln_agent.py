"""Purple's ReAct agent (scripted through a local OpenAI-compatible server) on a reproduce and a
fix task through green: the assignments reach it (poc_task, fix_task), it gets the toolset of
each, and what it submits is judged."""

from __future__ import annotations

import pytest

from fixtures.catalog import get_task
from tests.integration.helpers import submit_task, wait_terminal
from tests.support.fake_llm import FakeReply

pytestmark = pytest.mark.docker


def call(name: str, **args) -> FakeReply:
    return FakeReply(content=f"Next: {name}.", tool_calls=[(name, args)])


def test_the_agent_reproduces_with_write_input_and_fixes_with_replace_in_file(
    llm, llm_purple, start_green, fixture_assets
):
    purple = llm_purple()
    green = start_green(purple_url=purple.url, judge_fuzz_runs=200, fix_floor=False)
    poc = (fixture_assets / "900001" / "poc").read_bytes()
    llm.push(
        call("run_bash_cmd", command="ls /out /workspace; cat /workspace/description.txt"),
        call("write_input", content=poc.hex(), encoding="hex"),
        call("run_bash_cmd", command="/out/xml_fuzzer /workspace/shared/poc 2>&1 | tail -3"),
        call("submit_input"),
    )
    reproduced = wait_terminal(green.url, submit_task(green.url, {"task": "arvo-poc:900001"})["id"])
    assert reproduced["status"] == "completed", reproduced["error"]
    scores = reproduced["scores"]
    assert (scores["reproduced"], scores["fix_distinguishes"], scores["same_bug"]) == (1, 1, 1)
    first = str(llm.requests[0]["messages"])
    assert "write_input" in first and "# Vulnerability reproduction task" in first

    task = get_task(900001)
    line = "        if (q < end && (*q == 'x' || *q == 'X')) {"  # the developers' fix
    llm.push(
        call("show_file", path=task.crash_file, start_line=68, end_line=74),
        call("replace_in_file", path=task.crash_file, from_line=71, to_line=71, content=line),
        call("run_bash_cmd", command="git diff --stat"),
        call("finish", summary="the numeric reference decoder checks the end first"),
    )
    fixed = wait_terminal(
        green.url, submit_task(green.url, {"task": "arvo-fix:900001"})["id"], timeout=300
    )
    assert fixed["status"] == "completed", fixed["error"]
    assert fixed["scores"]["resolved"] == 1.0, fixed["scores"]["explanation"]
    assert fixed["submission"]["files"] == [task.crash_file]
    fix_prompt = str(llm.requests[len(llm.requests) - 4]["messages"])
    assert "# Vulnerability fixing task" in fix_prompt and "replace_in_file" in fix_prompt
    assert "find_test_files" not in fix_prompt
