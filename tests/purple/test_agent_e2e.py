"""The whole purple core over real HTTP: ReactAgent + OpenAIChatModel + the fake OpenAI server +
a local shell workspace holding the demo project and a real gcc ASan report."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from services.purple.agent.config import AgentConfig
from services.purple.agent.loop import ReactAgent
from services.purple.agent.parser import format_text_call
from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.config import PurpleSettings
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.purple.policies import FallbackPolicy, NoPolicy, build_policy
from services.purple.protocols import TaskContext
from services.shared.protocol import SubmitResult
from tests.support.fake_llm import FakeError, FakeLLMServer, FakeReply
from tests.support.local_env import LocalShellEnvironment, make_workspace

DATA = Path(__file__).parent / "data"
REPO = Path(__file__).resolve().parents[2]
LOCS = [
    {
        "file": "lib/buf.c",
        "function": "buf_new",
        "line_start": 10,
        "line_end": 10,
        "description": "allocates len - 1 bytes",
    },
    {
        "file": "lib/buf.c",
        "function": "buf_fill",
        "line_start": 17,
        "line_end": 18,
        "description": "writes len bytes",
    },
]


@pytest.fixture
def task(tmp_path: Path) -> TaskContext:
    paths = make_workspace(
        tmp_path / "ws",
        project="demo",
        error_txt=(DATA / "reports" / "gcc_asan_heap_overflow.txt").read_bytes(),
    )
    shutil.copytree(DATA / "demo_src", Path(paths.source_dir) / "demo", dirs_exist_ok=True)
    return TaskContext(
        task_id="e2e",
        description="Task: find the root cause of the crash in /workspace/error.txt.",
        env=LocalShellEnvironment(paths),
        paths=paths,
    )


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


def agent(server: FakeLLMServer, tmp_path: Path | None = None, **cfg) -> ReactAgent:
    llm = OpenAIChatModel(
        OpenAIModelConfig(
            model="gpt-4o-mini", base_url=server.base_url, api_key="k", backoff_initial_s=0.01
        )
    )
    return ReactAgent(llm, AgentConfig(**cfg), trajectory_dir=tmp_path)


async def test_tool_calls_explore_submit_refused_then_accepted(server, task, tmp_path) -> None:
    task.env.refuse_first = 1
    server.push(
        FakeReply(
            content="Read the report.",
            tool_calls=[("run_bash_cmd", {"command": "cat error.txt"})],
            prompt_tokens=1200,
            completion_tokens=30,
        ),
        FakeError(500),  # a transient failure on the way: retried, not counted
        FakeReply(
            tool_calls=[("search_code", {"pattern": "buf_new", "file_pattern": "*.c"})],
            prompt_tokens=1500,
            completion_tokens=25,
        ),
        FakeReply(
            tool_calls=[
                ("show_file", {"path": "/src/demo/lib/buf.c", "start_line": 5, "end_line": 20})
            ],
            prompt_tokens=1900,
            completion_tokens=40,
        ),
        FakeReply(
            tool_calls=[("submit_localization", {"locations": LOCS[:1], "reasoning": "first"})],
            prompt_tokens=2300,
            completion_tokens=90,
        ),
        FakeReply(
            tool_calls=[("submit_localization", {"locations": LOCS, "reasoning": "fixed"})],
            prompt_tokens=2400,
            completion_tokens=120,
        ),
    )
    result = await agent(server, tmp_path / "traj").run(task)
    assert result.status == "submitted", result.reason
    assert result.submission.reasoning == "fixed" and len(result.submission.locations) == 2
    written = json.loads(Path(task.paths.submission).read_text())
    assert written["locations"][0]["function"] == "buf_new"
    # token totals are exactly the server's usage figures
    assert (result.stats.tokens_in, result.stats.tokens_out) == server.usage_totals == (9300, 305)
    assert result.stats.cost == pytest.approx((9300 * 0.15 + 305 * 0.60) / 1e6)
    assert result.stats.steps == 5 and server.errors_sent == 1 and len(server.requests) == 6
    # what the agent sent: tools every time, growing conversation with tool replies
    last = server.requests[-1]
    assert {t["function"]["name"] for t in last["tools"]} == {
        "run_bash_cmd",
        "show_file",
        "search_code",
        "submit_localization",
    }
    tool_replies = [m for m in last["messages"] if m["role"] == "tool"]
    assert "heap-buffer-overflow" in tool_replies[0]["content"]
    assert "demo/lib/buf.c:6:buf_new(size_t len)" in tool_replies[1]["content"]
    assert (
        "    10  \tb->data = malloc(len - 1); /* BUG: one byte short */"
        in tool_replies[2]["content"]
    )
    assert "Submission refused" in tool_replies[3]["content"]
    assert [s[1].accepted for s in task.env.submits] == [False, True]
    assert task.env.submits[-1][0].tokens_in == 9300  # usage so far goes with the submit


async def test_stops_at_its_step_limit(server, task) -> None:
    server.default = FakeReply(
        tool_calls=[("run_bash_cmd", {"command": "ls"})], prompt_tokens=10, completion_tokens=1
    )
    result = await agent(server, step_limit=4).run(task)
    assert result.status == "limits" and result.stats.steps == 4 and len(server.requests) == 4
    assert result.stats.tokens_in == 40 and task.env.submits == []


async def test_text_mode_end_to_end(server, task) -> None:
    server.push(
        FakeReply(
            content=format_text_call(
                "run_bash_cmd",
                {"command": "grep -n malloc src-vul/demo/lib/buf.c"},
                "Where is memory allocated?",
            )
        ),
        FakeReply(content="I am not sure what to do."),
        FakeReply(
            content=format_text_call(
                "submit_localization", {"locations": json.dumps(LOCS), "reasoning": "off by one"}
            )
        ),
    )
    result = await agent(server, mode="text").run(task)
    assert result.status == "submitted" and result.submission.reasoning == "off by one"
    assert all("tools" not in r for r in server.requests)
    msgs = server.requests[-1]["messages"]
    assert "----BEGIN_FUNCTION_CALL----" in msgs[0]["content"]
    assert msgs[3]["role"] == "user" and "10:\tb->data = malloc(len - 1);" in msgs[3]["content"]
    assert msgs[5]["content"].startswith("Observation: No function call found")
    assert (result.stats.tokens_in, result.stats.tokens_out) == server.usage_totals


async def test_build_policy_from_settings(server, task, tmp_path) -> None:
    offline = PurpleSettings(policy="stacktrace", trajectory_dir=tmp_path / "traj")
    assert isinstance(build_policy(offline), StackTraceAnalyst)
    assert isinstance(build_policy(offline, "swe_task"), NoPolicy)
    settings = PurpleSettings(
        policy="react",
        model="gpt-4o-mini",
        openai_base_url=server.base_url,
        openai_api_key="k",
        mode="text",
        step_limit=2,
        llm_retries=1,
        trajectory_dir=tmp_path / "traj",
    )
    policy = build_policy(settings)
    assert isinstance(policy, ReactAgent) and policy.toolset.name == "rca"
    assert policy.config.mode == "text" and policy.config.step_limit == 2
    assert policy.llm.config.max_retries == 1
    assert "ROOT CAUSE" in policy.config.system_template
    assert build_policy(settings, "swe_task").toolset.name == "swe"


def test_an_offline_purple_starts_without_the_openai_sdk() -> None:
    """The SDK is imported only for a policy with a model: it was a third of every purple's
    start (0.4 s of CPU), which the offline analyst never needs."""
    probe = (
        "import sys; from services.purple.app import create_app;"
        " from services.purple.policies import build_policy;"
        " from services.purple.config import PurpleSettings;"
        " build_policy(PurpleSettings(policy='stacktrace'));"
        " print('openai' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "False", out


async def test_agent_config_file_under_the_settings(tmp_path) -> None:
    """The file gives the templates and limits; a limit set in the settings wins over it."""
    path = tmp_path / "agent.toml"
    path.write_text(
        'step_limit = 7\ncost_limit = 0.5\nsystem_template = "Find {{ paths.error_report }}."\n'
    )
    settings = PurpleSettings(policy="react", openai_api_key="k", agent_config=path, cost_limit=1.5)
    config = build_policy(settings).config
    assert (config.step_limit, config.cost_limit) == (7, 1.5)
    assert config.system_template == "Find {{ paths.error_report }}."
    assert "submit_localization" in config.instance_template  # the built-in one
    path.write_text('system_template = "{% if %}"\n')
    with pytest.raises(ValueError, match="not a valid Jinja2 template"):
        build_policy(settings)


async def test_fallback_to_the_analyst_when_the_agent_gives_up(server, task, tmp_path) -> None:
    server.default = FakeReply(content="no idea", prompt_tokens=5, completion_tokens=1)
    path = tmp_path / "agent.toml"
    path.write_text("max_consecutive_format_errors = 2\n")
    policy = build_policy(
        PurpleSettings(
            policy="react",
            openai_base_url=server.base_url,
            openai_api_key="k",
            agent_config=path,
            trajectory_dir=tmp_path / "traj",
            fallback_to_analyst=True,
        )
    )
    assert isinstance(policy, FallbackPolicy)
    result = await policy.run(task)
    assert result.status == "submitted" and result.policy == "react+stack-trace-analyst"
    assert result.submission.locations[0].function == "buf_fill"
    assert result.stats.tokens_in == 10 and "format_errors" in result.reason
    assert sorted(p.name for p in (tmp_path / "traj").iterdir()) == [
        "e2e.react.events.jsonl",
        "e2e.react.traj.json",
        "e2e.stack-trace-analyst.events.jsonl",
        "e2e.stack-trace-analyst.traj.json",
    ]


async def test_offline_a_reproduce_task_gets_the_empty_input_floor(tmp_path) -> None:
    """Without an LLM a reproduce task is answered with its floor, an empty input, submitted:
    the task is judged (and scores 0) instead of failing for want of a submission."""
    offline = PurpleSettings(policy="stacktrace", trajectory_dir=tmp_path / "traj")
    policy = build_policy(offline, "poc_task")
    paths = make_workspace(tmp_path / "ws")
    paths = paths.model_copy(update={"submission": str(tmp_path / "ws" / "shared" / "poc")})
    env = _InputEnvironment(paths)
    result = await policy.run(
        TaskContext(task_id="t", description="reproduce", env=env, paths=paths)
    )
    assert result.status == "submitted" and "empty input" in result.reason
    assert (tmp_path / "ws" / "shared" / "poc").read_bytes() == b"" and len(env.submits) == 1
    assert isinstance(build_policy(offline, "fix_task"), NoPolicy)  # a fix needs an LLM


class _InputEnvironment(LocalShellEnvironment):
    """A reproduce task's workspace: ``submit`` takes any input that exists, as green does."""

    async def submit(self, stats=None) -> SubmitResult:
        exists = Path(self.paths.submission).exists()
        reply = SubmitResult(accepted=exists, errors=[] if exists else ["no input"])
        self.submits.append((stats, reply))
        return reply
