"""SWE-bench mode end to end against a real Docker engine and the locally built fixtures:
the runner (one container per instance) + the ReAct agent over HTTP to the fake OpenAI server
+ the local judge in fresh containers.

Builds the fixtures first (``python -m fixtures.swebench.build``: seconds when cached).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from fixtures.swebench.build import HERE as FIXTURES
from fixtures.swebench.build import INSTANCES_FILE
from services.purple.agent.config import AgentConfig
from services.purple.llm.openai_chat import OpenAIChatModel, OpenAIModelConfig
from services.sandbox.base import SandboxSpec
from services.sandbox.docker import DockerSandboxProvider
from services.swebench import cli
from services.swebench.instances import load_instances
from services.swebench.judge import apply_patch, evaluate, extract_patch, patch_files, run_tests
from services.swebench.predictions import load_predictions
from services.swebench.runner import RunConfig, run_batch
from tests.support.containers import container_names
from tests.support.fake_llm import FakeError, FakeLLMServer, FakeReply
from tests.support.fixture_builds import build_fixtures
from tests.support.swe_attacks import FAKE_PASS_CONFTEST, FAKE_PASS_FROM_CODE

from .test_swe_tools import git

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

PREFIX = f"swetest{secrets.token_hex(3)}"
WRAP = "arena__wraptext-1"
INI = "arena__iniparse-1"
BUGGY = "            if current and len(indent) + needed >= width:"
FIXED = "            if current and len(indent) + needed > width:"


@pytest.fixture(scope="module")
def dc():
    try:
        client = docker.from_env()
        client.ping()
    except Exception as exc:
        pytest.skip(f"no Docker engine ({exc}); run scripts/ensure-docker.sh")
    yield client
    asyncio.run(DockerSandboxProvider(client, label_prefix=PREFIX).reap())
    client.close()


@pytest.fixture(scope="module")
def instances(dc):
    build_fixtures("fixtures.swebench.build")
    return {i.instance_id: i for i in load_instances(INSTANCES_FILE)}


@pytest.fixture(scope="module")
def provider(dc) -> DockerSandboxProvider:
    return DockerSandboxProvider(dc, label_prefix=PREFIX)


def leftovers(dc) -> list[str]:
    return container_names(dc, f"{PREFIX}.managed=1")


def buggy_line() -> int:
    source = (FIXTURES / "wraptext" / "repo" / "src" / "wraptext" / "wrap.py").read_text()
    return source.splitlines().index(BUGGY) + 1


def reply(name: str, **args) -> FakeReply:
    return FakeReply(content=f"Next: {name}.", tool_calls=[(name, args)])


def wraptext_script() -> list[FakeReply]:
    line = buggy_line()
    return [
        reply("find_test_files", name_or_module="wraptext.wrap"),
        reply("search_code", pattern="def wrap", path="src"),
        reply("show_file", path="src/wraptext/wrap.py", start_line=line - 6, end_line=line + 6),
        reply(
            "run_bash_cmd",
            command='python -c \'import sys; sys.path.insert(0, "src"); '
            'from wraptext import wrap; print(wrap("aaa bbb", 7))\'',
        ),
        reply(
            "replace_in_file",
            path="src/wraptext/wrap.py",
            from_line=line,
            to_line=line,
            content=FIXED,
        ),
        # a test edit and a scratch file: the test edit must stay out of the patch
        reply(
            "run_bash_cmd",
            command="echo '# scratch' >> tests/test_wrap.py && "
            "echo 'print(1)' > /tmp/reproduce.py && python -m pytest -q -p no:cacheprovider",
        ),
        reply("finish", summary="A line of exactly `width` characters was split: >= became >."),
    ]


def local_repo(tmp_path: Path, name: str) -> Path:
    """A git copy of a fixture repository (for making patches and checking they apply)."""
    repo = tmp_path / name
    shutil.copytree(FIXTURES / name / "repo", repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    return repo


def diff_after(repo: Path, rel: str, *edits: tuple[str, str]) -> str:
    """The ``git diff`` of ``rel`` after replacing each ``old`` with ``new`` (then reverted)."""
    path = repo / rel
    text = path.read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    out = git(repo, "diff")
    git(repo, "checkout", "-q", "--", rel)
    return out


async def test_run_batch_fixes_an_instance_and_the_judge_resolves_it(
    dc, instances, provider, tmp_path
) -> None:
    script = wraptext_script()

    def route(body: dict) -> FakeReply | FakeError:
        task = body["messages"][1]["content"]
        if "arena/wraptext" in task:
            return script.pop(0)
        return FakeError(400, "this model is unavailable")  # iniparse: the endpoint fails

    out = tmp_path / "run"
    with FakeLLMServer(default=route) as server:
        llm = OpenAIChatModel(
            OpenAIModelConfig(model="gpt-4o-mini", base_url=server.base_url, api_key="k")
        )
        config = RunConfig(output_dir=out, workers=2, command_timeout_s=120)
        results = await run_batch(
            [instances[INI], instances[WRAP]],
            llm=llm,
            agent_config=AgentConfig(step_limit=20),
            config=config,
            provider=provider,
        )
        by_id = {r.instance_id: r for r in results}
        assert by_id[WRAP].status == "submitted", by_id[WRAP].reason
        assert by_id[WRAP].reason.startswith("finished: A line of exactly")
        assert by_id[WRAP].steps == 7 and by_id[WRAP].patch_lines == 2
        assert by_id[INI].status == "error" and "unavailable" in by_id[INI].reason
        assert script == []
        assert leftovers(dc) == []  # every container is removed

        preds = load_predictions(out / "preds.json")
        assert list(preds) == [WRAP]  # a failed endpoint writes no prediction: resume retries
        patch = preds[WRAP]["model_patch"]
        assert preds[WRAP]["model_name_or_path"] == "gpt-4o-mini"
        assert patch_files(patch) == ["src/wraptext/wrap.py"]  # the test edit is not in it
        assert f"-{BUGGY}\n+{FIXED}\n" in patch
        results_doc = json.loads((out / "results.json").read_text())
        assert results_doc[INI]["status"] == "error" and results_doc[WRAP]["steps"] == 7
        traj = json.loads((out / "trajectories" / f"{WRAP}.react.traj.json").read_text())
        assert traj["result"]["status"] == "submitted"
        tool_outputs = [m["content"] for m in traj["messages"] if m["role"] == "tool"]
        assert "tests/test_wrap.py" in tool_outputs[0]
        assert "['aaa', 'bbb']" in tool_outputs[3]  # the bug, reproduced in the container
        assert "13 passed" in tool_outputs[5]

        # resume: the done instance is skipped, the failed one is retried (and fails again)
        seen = len(server.requests)
        again = await run_batch(
            [instances[INI], instances[WRAP]],
            llm=llm,
            agent_config=AgentConfig(step_limit=20),
            config=config,
            provider=provider,
        )
        assert {r.instance_id: r.status for r in again} == {INI: "error", WRAP: "skipped"}
        assert len(server.requests) == seen + 1  # one call for iniparse, none for wraptext

    # the patch applies cleanly to the base repository
    repo = local_repo(tmp_path, "wraptext")
    (tmp_path / "p.diff").write_text(patch)
    git(repo, "apply", "--check", str(tmp_path / "p.diff"))

    # the local judge, in a fresh container: resolved
    report = await evaluate(provider, instances[WRAP], None, patch)
    assert report.patch_applied and report.resolved, report.log
    assert report.fail_to_pass == {"tests/test_wrap.py::test_line_may_be_exactly_width": "PASSED"}
    assert len(report.pass_to_pass) == 13 and set(report.pass_to_pass.values()) == {"PASSED"}
    assert leftovers(dc) == []

    # the CLI judge on the same preds.json
    result = CliRunner().invoke(
        cli.app, ["evaluate", str(out / "preds.json"), "--instances", str(INSTANCES_FILE)]
    )
    assert result.exit_code == 0, result.output
    assert "resolved 1/1" in result.output
    report_doc = json.loads((out / "preds.eval.json").read_text())
    assert report_doc["resolved_ids"] == [WRAP]


async def test_wrong_patches_are_unresolved(dc, instances, provider, tmp_path) -> None:
    inst = instances[WRAP]
    repo = local_repo(tmp_path, "wraptext")
    # applies, but fixes nothing
    readme_only = diff_after(repo, "README.md", ("Greedy word wrapping", "Greedy wrapping"))
    report = await evaluate(provider, inst, None, readme_only)
    assert report.patch_applied and not report.resolved
    assert report.fail_to_pass == {"tests/test_wrap.py::test_line_may_be_exactly_width": "FAILED"}
    assert set(report.pass_to_pass.values()) == {"PASSED"}
    # fixes the issue but breaks a PASS_TO_PASS test
    breaks = diff_after(
        repo,
        "src/wraptext/wrap.py",
        (BUGGY, FIXED),
        ("        return joined\n", "        return joined + ' '\n"),
    )
    report = await evaluate(provider, inst, None, breaks)
    assert report.patch_applied and not report.resolved, report.log
    assert report.fail_to_pass["tests/test_wrap.py::test_line_may_be_exactly_width"] == "PASSED"
    assert report.pass_to_pass["tests/test_helpers.py::test_shorten_keeps_short_text"] == "FAILED"
    # does not apply at all
    report = await evaluate(provider, inst, None, readme_only.replace("Greedy word", "Lazy word"))
    assert not report.patch_applied and not report.resolved and report.fail_to_pass == {}
    assert "NOT APPLIED" in report.log
    # empty
    assert not (await evaluate(provider, inst, None, "")).patch_applied
    assert leftovers(dc) == []


async def test_apply_and_run_tests_on_one_sandbox(dc, instances, provider) -> None:
    """The pieces green reuses: apply_patch + run_tests (test_patch applied, idempotently)."""
    inst = instances["arena__semver-1"]
    sandbox = await provider.create(
        SandboxSpec(  # the judge's own container: its commands are green's, as root
            image=inst.image_name,
            task_id="t",
            ref_id=inst.instance_id,
            workdir="/testbed",
            agent_uid=None,
        )
    )
    try:
        before = await run_tests(sandbox, inst, inst.FAIL_TO_PASS)
        assert set(before.values()) == {"FAILED"}
        ok, out = await apply_patch(sandbox, inst.patch)
        assert ok and "APPLIED: git apply" in out
        after = await run_tests(
            sandbox, inst, [*inst.FAIL_TO_PASS, "tests/test_version.py::test_bump"]
        )
        assert set(after.values()) == {"PASSED"}
        assert await run_tests(sandbox, inst, ["tests/test_nope.py::test_x"]) == {
            "tests/test_nope.py::test_x": "ERROR"
        }
        again, out = await apply_patch(sandbox, inst.patch)  # already applied: refused
        assert not again and "NOT APPLIED" in out
    finally:
        await sandbox.remove()
    assert leftovers(dc) == []


# ---- hostile patches: issue 39, attack 7 --------------------------------------------------------


def added_file(repo: Path, rel: str, text: str, append: bool = False) -> str:
    """The ``git diff`` that writes ``text`` to ``rel`` (appends it with ``append``)."""
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    before = path.read_text() if path.exists() else None
    path.write_text((before or "") + text if append else text)
    git(repo, "add", "-A")
    out = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard")
    return out


async def test_a_conftest_that_marks_every_report_passed_is_not_judged(
    dc, instances, provider, tmp_path
) -> None:
    """No fix, and a conftest.py hook wrapper that turns every report into a pass, at the
    repository's top and beside the tests: the judge applies neither (they are the task's)."""
    inst = instances[WRAP]
    repo = local_repo(tmp_path, "wraptext")
    conftests = added_file(repo, "conftest.py", FAKE_PASS_CONFTEST) + added_file(
        repo, "tests/conftest.py", FAKE_PASS_CONFTEST, append=True
    )
    report = await evaluate(provider, inst, None, conftests)
    assert not report.patch_applied and not report.resolved, report.log
    assert report.ignored == {
        "conftest.py": "pytest's configuration",
        "tests/conftest.py": "pytest's configuration",
    }
    readme = diff_after(repo, "README.md", ("Greedy word wrapping", "Greedy wrapping"))
    report = await evaluate(provider, inst, None, readme + conftests)
    assert report.patch_applied and not report.resolved, report.log
    assert report.fail_to_pass == {"tests/test_wrap.py::test_line_may_be_exactly_width": "FAILED"}
    # with a real fix beside it, the fix alone is judged: resolved
    fixed = conftests + diff_after(repo, "src/wraptext/wrap.py", (BUGGY, FIXED))
    report = await evaluate(provider, inst, None, fixed)
    assert report.resolved and list(report.ignored) == ["conftest.py", "tests/conftest.py"]
    assert leftovers(dc) == []


async def test_reports_faked_from_the_code_under_test_fail_the_task(
    dc, instances, provider, tmp_path
) -> None:
    """The package itself, imported by the tests, rewrites how pytest makes reports: the
    judge's plugin sees a test that raised reported passed, and the task is not resolved."""
    inst = instances[WRAP]
    repo = local_repo(tmp_path, "wraptext")
    patch = added_file(repo, "src/wraptext/__init__.py", FAKE_PASS_FROM_CODE, append=True)
    report = await evaluate(provider, inst, None, patch)
    assert report.patch_applied and not report.resolved, report.log
    assert report.tampered == ["tests/test_wrap.py::test_line_may_be_exactly_width"]
    assert report.fail_to_pass == {"tests/test_wrap.py::test_line_may_be_exactly_width": "FAILED"}
    assert leftovers(dc) == []


async def test_test_output_that_prints_passes_is_not_read_as_statuses(
    dc, instances, provider, tmp_path
) -> None:
    """The package prints a ``PASSED <id>`` line for every test and then fails to import, so
    no test runs: the statuses come from pytest's reports, not from what the tests print."""
    inst = instances[WRAP]
    ids = [*inst.FAIL_TO_PASS, *inst.PASS_TO_PASS]
    forged = "".join(f"print('PASSED {t}')\n" for t in ids) + "raise ImportError('later')\n"
    repo = local_repo(tmp_path, "wraptext")
    patch = added_file(repo, "src/wraptext/__init__.py", forged + "\n", append=False)
    report = await evaluate(provider, inst, None, patch)
    assert report.patch_applied and not report.resolved, report.log
    assert f"PASSED {ids[0]}" in report.log  # it was printed, and not believed
    assert set(report.fail_to_pass.values()) | set(report.pass_to_pass.values()) == {"ERROR"}
    assert leftovers(dc) == []


async def test_taking_the_patch_out_runs_nothing_the_agent_configured(dc, instances, provider):
    """The agent's repository names a clean filter for every file and a file-system monitor,
    both programs of the agent's (run by green's submit, they would be its code outside its own
    commands, rewriting what it submits): taking the patch out runs neither, and leaves the
    agent's index as it was."""
    inst = instances[WRAP]
    spec = SandboxSpec(
        image=inst.image_name,
        task_id="t",
        ref_id=inst.instance_id,
        workdir="/testbed",
        writable=("/testbed",),  # as the agent gets it
    )
    sandbox = await provider.create(spec)
    try:
        agent = (
            "printf '#!/bin/sh\\ntouch /tmp/agent-code-ran\\ncat\\n' > /tmp/run.sh && "
            "chmod +x /tmp/run.sh && git config filter.mine.clean /tmp/run.sh && "
            "git config core.fsmonitor /tmp/run.sh && echo '* filter=mine' > .git/info/attributes"
            f" && sed -i 's/{BUGGY.strip()}/{FIXED.strip()}/' src/wraptext/wrap.py"
        )
        assert (await sandbox.exec(agent, 30)).exit_code == 0
        patch = await extract_patch(sandbox, inst)
        assert patch.files == ["src/wraptext/wrap.py"] and FIXED.strip() in patch.patch
        ran = await sandbox.exec("ls /tmp/agent-code-ran; git status --porcelain", 30)
        assert "No such file" in ran.output, ran.output  # neither the filter nor the monitor
        assert " M src/wraptext/wrap.py" in ran.output  # still unstaged: its index untouched
    finally:
        await sandbox.remove()
    assert leftovers(dc) == []
