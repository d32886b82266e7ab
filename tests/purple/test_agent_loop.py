"""The ReAct loop with an in-process scripted LLM and a local shell workspace."""

import asyncio
import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from services.purple.agent.compaction import SUMMARY_HEADER, estimate_tokens
from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import OBSERVATION_CUT, ReactAgent
from services.purple.agent.parser import FORMAT_HELP, format_text_call
from services.purple.commands import CommandLog
from services.purple.llm.base import LLMError, LLMReply, ToolCall
from services.purple.llm.scripted import ScriptedLLM
from services.purple.protocols import Policy, TaskContext
from services.purple.signals import TaskEnded
from services.purple.trajectory import Trajectory
from services.shared.text import clip_middle
from tests.support.local_env import LocalShellEnvironment, make_workspace

_ids = itertools.count()


def tc(name: str, cost: float = 0.0, **args) -> LLMReply:
    return LLMReply(
        content=f"calling {name}",
        tool_calls=[ToolCall(id=f"call_{next(_ids)}", name=name, arguments=json.dumps(args))],
        tokens_in=100,
        tokens_out=10,
        cost=cost,
    )


LOC = [{"file": "lib/a.c", "function": "f", "line_start": 2, "line_end": 3, "description": "d"}]


@pytest.fixture
def task(tmp_path: Path):
    paths = make_workspace(
        tmp_path / "ws",
        project="proj",
        files={"lib/a.c": "int f(void)\n{\n  return 1;\n}\n"},
        error_txt="==1==ERROR: AddressSanitizer: SEGV\n",
    )
    env = LocalShellEnvironment(paths)
    return TaskContext(task_id="t-1", description="Find the root cause.", env=env, paths=paths)


def run(llm, task, tmp_path=None, **cfg):
    return ReactAgent(llm, AgentConfig(**cfg), trajectory_dir=tmp_path).run(task)


async def test_agent_is_a_policy() -> None:
    assert isinstance(ReactAgent(ScriptedLLM()), Policy)


async def test_explore_then_submit(task, tmp_path: Path) -> None:
    llm = ScriptedLLM(
        [
            tc("run_bash_cmd", command="cat error.txt"),
            tc("show_file", path="lib/a.c", start_line=1, end_line=3),
            tc("search_code", pattern="return"),
            tc("submit_localization", locations=LOC, reasoning="because"),
        ]
    )
    result = await run(llm, task, tmp_path / "traj")
    assert result.status == "submitted" and result.submission.locations[0].file == "lib/a.c"
    assert result.stats.steps == 4 and result.stats.commands == 4
    assert (result.stats.tokens_in, result.stats.tokens_out) == (400, 40)
    assert [r.step for r in result.command_history] == [1, 2, 3, 4]
    # what the model saw: system, task, then assistant/tool pairs answering each call id
    msgs = llm.calls[-1]["messages"]
    assert [m["role"] for m in msgs] == ["system", "user"] + ["assistant", "tool"] * 3
    assert msgs[3]["tool_call_id"] == msgs[2]["tool_calls"][0]["id"]
    assert "SEGV" in msgs[3]["content"] and "     2  {" in msgs[5]["content"]
    assert "proj/lib/a.c:3:  return 1;" in msgs[7]["content"]
    assert llm.calls[0]["tools"][0]["function"]["name"] == "run_bash_cmd"
    system = msgs[0]["content"]
    assert "show_file(path: str, start_line: int = 1, end_line: int | None = None)" in system
    assert task.paths.error_report in system and FORMAT_HELP not in system
    assert msgs[1]["content"].startswith("Find the root cause.")
    # the green side got stats with the submission
    stats, reply = task.env.submits[-1]
    assert reply.accepted and stats.steps == 4 and stats.tokens_in == 400


async def test_trajectory_is_written_incrementally_and_finally(task, tmp_path: Path) -> None:
    llm = ScriptedLLM(
        [
            tc("run_bash_cmd", command="echo hello"),
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    result = await run(llm, task, tmp_path / "traj", step_limit=7)
    events = [
        json.loads(line)
        for line in (tmp_path / "traj" / "t-1.react.events.jsonl").read_text().splitlines()
    ]
    types = [e["type"] for e in events]
    assert types[0] == "start" and types[-1] == "end"
    assert types.count("llm_call") == 2 and types.count("command") == 2
    assert any(e["type"] == "command" and e["output"] == "hello\n" for e in events)
    assert [e["role"] for e in events if e["type"] == "message"][:3] == [
        "system",
        "user",
        "assistant",
    ]
    final = json.loads(Path(result.trajectory_path).read_text())
    assert final["config"]["step_limit"] == 7 and final["result"]["status"] == "submitted"
    assert final["model"]["class"] == "ScriptedLLM"
    assert len(final["result"]["command_history"]) == 2 and final["messages"][0]["role"] == "system"


async def test_each_command_is_recorded_once_from_one_record(task, tmp_path: Path) -> None:
    """History, usage and trajectory are fed by one call per command with one record, and the
    log's maker hears of the trajectory the policy attached (purple's executor lists its file
    in the task's record)."""
    opened: list[Trajectory] = []
    task.commands = CommandLog(task.usage, on_trajectory=opened.append)
    llm = ScriptedLLM(
        [
            tc("run_bash_cmd", command="echo one"),
            tc("show_file", path="lib/a.c", start_line=1, end_line=2),
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    result = await run(llm, task, tmp_path / "traj")
    events_path = tmp_path / "traj" / "t-1.react.events.jsonl"
    traced = [
        e for e in map(json.loads, events_path.read_text().splitlines()) if e["type"] == "command"
    ]
    history = task.commands.history
    assert [t.events_path for t in opened] == [events_path]
    assert result.command_history == history
    assert [(e["command"], e["step"]) for e in traced] == [(r.command, r.step) for r in history]
    assert result.stats.commands == len(history) == 3  # two tools + writing loc.json
    assert history[1].tool and history[1].tool.startswith("show_file") and history[0].step == 1


async def test_prompts_come_from_the_config_templates_and_are_recorded(task, tmp_path) -> None:
    llm = ScriptedLLM([tc("submit_localization", locations=LOC, reasoning="r")])
    system = "Report: {{ paths.error_report }}; {{ step_limit }} steps.\n{{ tools }}"
    result = await run(
        llm,
        task,
        tmp_path / "traj",
        step_limit=5,
        system_template=system,
        instance_template="Task <{{ task }}>",
    )
    sent = llm.calls[0]["messages"]
    assert sent[0]["content"].startswith(
        f"Report: {task.paths.error_report}; 5 steps.\nrun_bash_cmd("
    )
    assert sent[1]["content"] == "Task <Find the root cause.>"
    start = json.loads((tmp_path / "traj" / "t-1.react.events.jsonl").read_text().splitlines()[0])
    final = json.loads(Path(result.trajectory_path).read_text())
    for doc in (start, final):
        assert doc["prompts"] == {"system": sent[0]["content"], "instance": sent[1]["content"]}
        assert doc["config"]["system_template"] == system


async def test_the_builtin_templates_fill_the_unset_ones(task) -> None:
    agent = ReactAgent(ScriptedLLM([]), AgentConfig(instance_template="{{ task }}"))
    assert "ROOT CAUSE" in agent.config.system_template
    assert agent.config.instance_template == "{{ task }}"
    with pytest.raises(ValueError, match="not a valid Jinja2 template"):
        AgentConfig(system_template="{{ unclosed")
    with pytest.raises(Exception, match="nope"):  # an unknown variable is an error, not ""
        agent.config.model_copy(update={"system_template": "{{ nope }}"}).render(
            "system_template", task="x"
        )


async def test_step_limit(task) -> None:
    llm = ScriptedLLM(default=tc("run_bash_cmd", command="true"))
    result = await run(llm, task, step_limit=3)
    assert result.status == "limits" and result.reason == "step limit (3) reached"
    assert result.stats.steps == 3 and len(llm.calls) == 3 and result.submission is None


async def test_green_step_limit_applies_too(task) -> None:
    task.max_commands = 2  # one command to explore, one kept for loc.json; two refusals end it
    result = await run(ScriptedLLM(default=tc("run_bash_cmd", command="true")), task, step_limit=10)
    assert result.status == "limits" and "command limit (2)" in result.reason
    assert result.stats.steps == 3 and result.stats.commands == 1


async def test_last_green_command_is_kept_for_the_submission(task) -> None:
    task.max_commands = 3
    llm = ScriptedLLM(
        [
            tc("run_bash_cmd", command="true"),
            tc("show_file", path="lib/a.c"),
            tc("search_code", pattern="f"),
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    result = await run(llm, task, step_limit=10)
    assert result.status == "submitted" and result.stats.commands == 3
    assert "Command budget exhausted (2 of 3 used" in llm.calls[3]["messages"][-1]["content"]
    system = llm.calls[0]["messages"][0]["content"]
    assert "at most 10 steps (one tool call each) and 3 commands" in system


async def test_steps_left_warning(task) -> None:
    llm = ScriptedLLM(default=tc("run_bash_cmd", command="true"))
    await run(llm, task, step_limit=4, steps_left_warning=2)
    contents = [m["content"] for m in llm.calls[-1]["messages"] if m["role"] == "tool"]
    assert "step(s) left" not in contents[0] and "[2 step(s) left" in contents[1]
    assert "[1 step(s) left" in contents[2]


async def test_cost_limit(task) -> None:
    llm = ScriptedLLM(default=tc("run_bash_cmd", cost=0.6, command="true"))
    result = await run(llm, task, cost_limit=1.0)
    assert result.status == "limits" and "cost limit" in result.reason
    assert result.stats.steps == 2 and result.stats.cost == pytest.approx(1.2)


async def test_wall_time_limit_interrupts_a_slow_model(task) -> None:
    class SlowLLM(ScriptedLLM):
        async def query(self, messages, tools=None):
            await asyncio.sleep(5)
            return tc("run_bash_cmd", command="true")

    result = await run(SlowLLM(), task, wall_time_limit_s=0.3)
    assert result.status == "limits" and "wall-time" in result.reason
    assert result.duration_s < 2


async def test_green_deadline_is_respected(task) -> None:
    task.deadline = datetime.now(UTC) + timedelta(seconds=10)
    result = await run(
        ScriptedLLM(default=tc("run_bash_cmd", command="true")), task, deadline_margin_s=10.5
    )
    assert result.status == "limits" and "wall-time" in result.reason and result.stats.steps == 0


async def test_consecutive_format_errors_end_the_run(task) -> None:
    llm = ScriptedLLM(default=LLMReply(content="I think the bug is in f()."))
    result = await run(llm, task, max_consecutive_format_errors=3)
    assert result.status == "format_errors" and result.stats.steps == 3
    last = llm.calls[-1]["messages"][-1]
    assert last["role"] == "user" and "Your reply had no tool call" in last["content"]


async def test_format_error_counter_resets_after_a_valid_call(task) -> None:
    bad = LLMReply(content="no call")
    llm = ScriptedLLM(
        [
            bad,
            bad,
            tc("run_bash_cmd", command="true"),
            bad,
            bad,
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    result = await run(llm, task, max_consecutive_format_errors=3)
    assert result.status == "submitted"


async def test_bad_calls_become_observations(task) -> None:
    bad_json = LLMReply(tool_calls=[ToolCall(id="x1", name="run_bash_cmd", arguments="{not json")])
    llm = ScriptedLLM(
        [
            tc("rm_rf", path="/"),
            tc("show_file", start_line=3),
            bad_json,
            tc("show_file", path="lib/a.c", start_line="three"),
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    result = await run(llm, task, max_consecutive_format_errors=5)
    assert result.status == "submitted"
    tool_msgs = [m for m in llm.calls[-1]["messages"] if m["role"] == "tool"]
    assert "Unknown tool 'rm_rf'" in tool_msgs[0]["content"]
    assert "missing required argument 'path'" in tool_msgs[1]["content"]
    assert tool_msgs[2]["tool_call_id"] == "x1" and "not valid JSON" in tool_msgs[2]["content"]
    assert "start_line: Input should be a valid integer" in tool_msgs[3]["content"]


async def test_several_native_calls_in_one_reply_are_all_answered(task) -> None:
    reply = LLMReply(
        tool_calls=[
            ToolCall(id="a", name="run_bash_cmd", arguments='{"command": "echo one"}'),
            ToolCall(id="b", name="run_bash_cmd", arguments='{"command": "echo two"}'),
        ]
    )
    llm = ScriptedLLM([reply, tc("submit_localization", locations=LOC, reasoning="r")])
    result = await run(llm, task)
    msgs = llm.calls[-1]["messages"]
    assert [(m["tool_call_id"], "one" in m["content"]) for m in msgs if m["role"] == "tool"] == [
        ("a", True),
        ("b", False),
    ]
    assert result.stats.commands == 3 and result.stats.steps == 2


async def test_refused_submission_is_fixed(task) -> None:
    task.env.refuse_first = 1
    llm = ScriptedLLM(
        [
            tc("submit_localization", locations=LOC, reasoning="r"),
            tc("submit_localization", locations=LOC, reasoning="r2"),
        ]
    )
    result = await run(llm, task)
    assert result.status == "submitted" and result.submission.reasoning == "r2"
    assert "Submission refused" in llm.calls[1]["messages"][-1]["content"]


async def test_text_mode(task) -> None:
    llm = ScriptedLLM(
        [
            LLMReply(
                content=format_text_call("run_bash_cmd", {"command": "echo a\necho b"}, "look")
            ),
            LLMReply(content="garbage"),
            LLMReply(
                content=format_text_call(
                    "submit_localization",
                    {"locations": json.dumps(LOC), "reasoning": "multi\nline"},
                )
            ),
        ]
    )
    result = await run(llm, task, mode="text")
    assert result.status == "submitted" and result.submission.reasoning == "multi\nline"
    assert llm.calls[0]["tools"] is None
    msgs = llm.calls[-1]["messages"]
    assert FORMAT_HELP in msgs[0]["content"]
    assert msgs[3] == {
        "role": "user",
        "content": "Observation: <returncode>0</returncode>\n<output>a\nb\n</output>",
    }
    assert msgs[5]["content"].startswith("Observation: No function call found")


async def test_native_mode_accepts_a_textual_call_as_fallback(task) -> None:
    llm = ScriptedLLM(
        [
            LLMReply(content=format_text_call("run_bash_cmd", {"command": "echo hi"})),
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    result = await run(llm, task)
    assert result.status == "submitted"
    assert llm.calls[1]["messages"][3]["content"].startswith("Observation: <returncode>0")


def test_observation_clipping() -> None:
    text = "HEAD" + "x" * 10_000 + "TAIL"
    out = clip_middle(text, 1000, OBSERVATION_CUT)
    assert out.startswith("HEAD") and out.endswith("TAIL") and len(out) <= 1000
    kept = len(out) - len(out.splitlines()[1]) - 2
    assert f"[... {len(text) - kept} characters cut from the middle of this output ...]" in out
    assert clip_middle("short", 1000, OBSERVATION_CUT) == "short"
    assert clip_middle("y" * 1000, 1000, OBSERVATION_CUT) == "y" * 1000


async def test_long_observations_are_truncated(task) -> None:
    llm = ScriptedLLM(
        [
            tc("run_bash_cmd", command="head -c 50000 /dev/zero | tr '\\0' x; echo END"),
            tc("submit_localization", locations=LOC, reasoning="r"),
        ]
    )
    await run(llm, task, observation_limit=2000)
    obs = llm.calls[1]["messages"][3]["content"]
    assert len(obs) <= 2000 and OBSERVATION_CUT in obs and obs.endswith("END\n</output>")
    assert obs.startswith("<returncode>0</returncode>\n<output>xxx")


async def test_compaction_keeps_every_command_and_respects_the_budget(task, tmp_path) -> None:
    n = 30
    script = [
        tc("run_bash_cmd", command=f"echo step{i}; head -c 3000 /dev/zero | tr '\\0' y")
        for i in range(n)
    ]
    script.append(tc("submit_localization", locations=LOC, reasoning="r"))
    llm = ScriptedLLM(script)
    budget = 4000
    result = await run(
        llm,
        task,
        tmp_path / "traj",
        context_budget_tokens=budget,
        keep_last_turns=3,
        step_limit=100,
    )
    assert result.status == "submitted" and len(result.command_history) == n + 1
    sizes = [estimate_tokens(c["messages"]) for c in llm.calls]
    assert max(sizes) < budget + 1200  # at most one step's growth over the budget
    last = llm.calls[-1]["messages"]
    assert last[0]["role"] == "system" and last[1]["content"].startswith("Find the root cause.")
    summary = last[2]["content"]
    assert summary.startswith(SUMMARY_HEADER)
    listed = [line for line in summary.splitlines() if line.strip()[:1].isdigit()]
    shown = {int(line.split(".")[0]) for line in listed}
    assert shown >= set(range(1, n - 3))  # every command before the kept turns is listed
    assert all(f"echo step{i}" in summary for i in range(n - 4))
    # the kept turns are whole: each tool message answers the assistant call before it
    for i, m in enumerate(last[3:], start=3):
        if m["role"] == "tool":
            assert last[i - 1]["role"] == "assistant"
    events = (tmp_path / "traj" / "t-1.react.events.jsonl").read_text()
    assert '"type": "compaction"' in events


async def test_environment_ending_the_task_stops_the_run(task) -> None:
    async def ended(command: str, timeout: float | None = None):
        raise TaskEnded("green: task is not running")

    task.env.execute = ended
    result = await run(ScriptedLLM(default=tc("run_bash_cmd", command="true")), task)
    assert result.status == "limits" and "not running" in result.reason


async def test_llm_failure_is_an_error_status(task) -> None:
    class Broken(ScriptedLLM):
        async def query(self, messages, tools=None):
            raise LLMError("401 Unauthorized")

    result = await run(Broken(), task)
    assert result.status == "error" and "401" in result.reason


async def test_unknown_config_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        AgentConfig(step_limt=3)
