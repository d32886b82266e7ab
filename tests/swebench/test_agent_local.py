"""The ReAct loop with the SWE toolset on a local repository (no Docker): the toolset is
pluggable, the RCA toolset stays the default, and finish ends the run."""

from __future__ import annotations

import json
from pathlib import Path

from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import ReactAgent
from services.purple.agent.parser import format_text_call
from services.purple.llm.base import LLMReply, ToolCall
from services.purple.llm.scripted import ScriptedLLM
from services.purple.protocols import TaskContext
from services.purple.tools.toolsets import RcaToolset, SweToolset
from services.swebench.instances import SweInstance, issue_description, swe_paths

from .test_swe_tools import SweLocalEnvironment, git


def call(name: str, **args) -> LLMReply:
    return LLMReply(
        content=f"calling {name}",
        tool_calls=[ToolCall(id=f"c_{name}", name=name, arguments=json.dumps(args))],
        tokens_in=100,
        tokens_out=10,
    )


def make_repo(root: Path) -> Path:
    (root / "calc").mkdir(parents=True)
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "ops.py").write_text("def add(a, b):\n    return a - b\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    return root


def task_for(repo: Path) -> TaskContext:
    instance = SweInstance(
        instance_id="calc__calc-1",
        repo="calc/calc",
        base_commit=git(repo, "rev-parse", "HEAD").strip(),
        problem_statement="add(1, 2) returns -1",
    )
    paths = swe_paths(str(repo))
    return TaskContext(
        task_id=instance.instance_id,
        description=issue_description(instance, workdir=str(repo)),
        env=SweLocalEnvironment(paths),
        paths=paths,
    )


def test_rca_stays_the_default() -> None:
    agent = ReactAgent(ScriptedLLM())
    assert isinstance(agent.toolset, RcaToolset)


async def test_tool_calls_fix_and_finish(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    llm = ScriptedLLM(
        [
            call("search_code", pattern="def add"),
            call("show_file", path="calc/ops.py"),
            call(
                "replace_in_file",
                path="calc/ops.py",
                from_line=2,
                to_line=2,
                content="    return a + b",
            ),
            call("run_bash_cmd", command="python3 -c 'from calc.ops import add; print(add(1, 2))'"),
            call("finish", summary="add subtracted; it adds now"),
        ]
    )
    agent = ReactAgent(
        llm, AgentConfig(step_limit=10), trajectory_dir=tmp_path / "traj", toolset=SweToolset()
    )
    result = await agent.run(task_for(repo))
    assert result.status == "submitted", result.reason
    assert result.reason == "finished: add subtracted; it adds now"
    assert result.submission is None and result.stats.steps == 5
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()
    messages = llm.calls[-1]["messages"]
    assert "Do not modify, add or delete tests" in messages[0]["content"]
    assert messages[1]["content"].startswith("<issue>\nadd(1, 2) returns -1\n</issue>")
    assert "calc/ops.py:1:def add(a, b):" in messages[3]["content"]
    assert messages[-1]["content"].endswith("<output>3\n</output>")
    assert {t["function"]["name"] for t in llm.calls[0]["tools"]} >= {"replace_in_file", "finish"}
    events = [
        json.loads(line)
        for line in (tmp_path / "traj" / "calc__calc-1.react.events.jsonl").read_text().splitlines()
    ]
    assert events[0]["type"] == "start" and events[0]["toolset"] == "swe"


async def test_text_mode_and_step_limit_reminder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    llm = ScriptedLLM(
        [
            LLMReply(content=format_text_call("run_bash_cmd", {"command": "git status --short"})),
            LLMReply(content="I think I am done."),  # no call: a format error, then a hint
            LLMReply(content=format_text_call("finish", {"summary": "nothing to do"})),
            LLMReply(content=format_text_call("finish", {"summary": "really"})),
        ]
    )
    agent = ReactAgent(llm, AgentConfig(mode="text", step_limit=4), toolset=SweToolset())
    result = await agent.run(task_for(repo))
    assert result.status == "submitted" and result.reason == "finished: really"
    msgs = llm.calls[-1]["messages"]
    assert "step(s) left: call finish" in msgs[3]["content"]
    assert "No function call found" in msgs[5]["content"]
    assert "No tracked file is changed" in msgs[7]["content"]
