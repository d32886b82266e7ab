"""SWE-bench instances served by green as A2A tasks, solved by the real purple (ReAct agent with
the SWE toolset, scripted through a local OpenAI-compatible server), judged by their tests."""

from __future__ import annotations

import pytest
from unidiff import PatchSet

from fixtures.swebench.build import HERE as SWE_FIXTURES
from fixtures.swebench.build import INSTANCES_FILE
from tests.integration.conftest import leftover_containers
from tests.integration.helpers import OPERATOR, submit_task, wait_terminal
from tests.support import web
from tests.support.fake_llm import FakeReply
from tests.support.fixture_builds import build_fixtures
from tests.support.swe_attacks import FAKE_PASS_CONFTEST, REWRITE_REPORT_AT_EXIT

pytestmark = pytest.mark.docker

WRAP = "arena__wraptext-1"
INIPARSE = "arena__iniparse-1"
SOURCE = "src/wraptext/wrap.py"


@pytest.fixture(scope="module")
def swe_fixtures(docker_client):
    build_fixtures("fixtures.swebench.build")
    return INSTANCES_FILE


def buggy_line() -> tuple[int, str]:
    """The line the known fix changes (its number in the buggy file) and its fixed text."""
    [changed] = PatchSet((SWE_FIXTURES / "wraptext" / "fix.patch").read_text())
    assert changed.path == SOURCE
    [hunk] = changed
    [removed] = [line for line in hunk if line.is_removed]
    [added] = [line for line in hunk if line.is_added]
    return removed.source_line_no, added.value.rstrip("\n")


def call(name: str, **args) -> FakeReply:
    return FakeReply(content=f"Next: {name}.", tool_calls=[(name, args)])


@pytest.fixture
def swe_stack(llm, llm_purple, start_green, swe_fixtures):
    purple = llm_purple()
    return start_green(purple_url=purple.url, swebench_instances=str(swe_fixtures)), llm


def test_a_swebench_task_is_fixed_through_green_and_judged_resolved(swe_stack, docker_client):
    green, llm = swe_stack
    line, fixed = buggy_line()
    llm.push(
        call("find_test_files", name_or_module="wraptext.wrap"),
        call("show_file", path=SOURCE, start_line=max(1, line - 3), end_line=line + 3),
        call("replace_in_file", path=SOURCE, from_line=line, to_line=line, content=fixed),
        call("run_bash_cmd", command="echo '# agent scratch' >> tests/test_wrap.py"),  # ignored
        call("finish", summary="a line of exactly width characters was split"),
    )
    task = submit_task(green.url, {"task": f"swebench:{WRAP}"})
    assert task["kind"] == "swebench" and task["arvo_id"] == WRAP
    done = wait_terminal(green.url, task["id"], timeout=300)
    assert done["status"] == "completed", done["error"]
    assert done["scores"]["resolved"] == 1.0, done["scores"]["explanation"]
    assert all(s == "PASSED" for s in done["scores"]["fail_to_pass"].values())
    assert "tests/test_wrap.py" not in done["submission"]["files"]  # tests stay untouched
    assert done["submission"]["files"] == [SOURCE]
    first_prompt = llm.requests[0]["messages"]
    assert "<issue>" in str(first_prompt) and "replace_in_file" in str(first_prompt)
    assert leftover_containers(docker_client, green.owner) == []  # agent's and judge's


def test_a_wrong_fix_is_judged_unresolved(swe_stack):
    green, llm = swe_stack
    llm.push(
        call("run_bash_cmd", command=f"sed -i '1i # a comment, not a fix' {SOURCE}"),
        call("finish", summary="not really"),
    )
    done = wait_terminal(
        green.url, submit_task(green.url, {"task": f"swebench:{WRAP}"})["id"], timeout=300
    )
    assert done["status"] == "completed" and done["scores"]["resolved"] == 0.0
    assert "not resolved" in done["scores"]["explanation"][0]
    r = web.post(f"{green.url}/tasks", headers=OPERATOR, json={"task": "swebench:no-such-instance"})
    assert r.status_code == 404


def test_swebench_offers_its_dataset_tools_through_the_kind_protocol(
    start_green, swe_fixtures, docker_client
):
    """List, prefetch and verify (the gold patch resolves the instance, by the same judge)."""
    green = start_green(swebench_instances=str(swe_fixtures))

    def post(path: str, body: dict) -> dict:
        r = web.post(f"{green.url}{path}", json=body, headers=OPERATOR, timeout=600)
        assert r.status_code == 200, r.text
        return r.json()

    listed = web.get(f"{green.url}/datasets/ids", params={"kind": "swebench"}, headers=OPERATOR)
    assert listed.json()["ids"] == ["arena__iniparse-1", "arena__semver-1", WRAP]
    dry = post("/datasets/prefetch", {"task": f"swebench:{WRAP}", "dry_run": True})
    assert dry["image"]["name"] == "arena/sweb.eval.x86_64.arena_1776_wraptext-1:latest"
    fetched = post("/datasets/prefetch", {"task": f"swebench:{WRAP}"})
    assert fetched["image"]["present"] is True
    row = post("/datasets/verify", {"task": f"swebench:{WRAP}"})
    assert (row["kind"], row["ref"], row["verified"]) == ("swebench", WRAP, True), row
    assert row["steps"][0]["detail"] == "the gold patch resolves the instance"
    unknown = post("/datasets/verify", {"task": "swebench:arena__nope-1"})
    assert not unknown["verified"] and unknown["reason"].startswith("instance: no instance")
    assert leftover_containers(docker_client, green.owner) == []


# ---- the agent against the judge: issue 39, attack 7 ---------------------------------------------


def test_7_a_conftest_that_marks_every_report_passed_scores_nothing(swe_stack):
    """The agent fixes nothing, adds a hook wrapper that turns every report into a pass to the
    tests' conftest.py, and submits: the judge takes conftest.py from the task. Not resolved,
    and the score says which change it did not apply."""
    green, llm = swe_stack
    llm.push(
        call(
            "run_bash_cmd", command=f"cat >> tests/conftest.py <<'EOF'\n{FAKE_PASS_CONFTEST}\nEOF"
        ),
        call("run_bash_cmd", command="python -m pytest -q -p no:cacheprovider | tail -1"),
        call("run_bash_cmd", command="echo 'Fixed.' >> README.md"),
        call("finish", summary="all tests pass"),
    )
    done = wait_terminal(
        green.url, submit_task(green.url, {"task": f"swebench:{WRAP}"})["id"], timeout=300
    )
    assert done["status"] == "completed", done["error"]
    assert done["scores"]["resolved"] == 0.0, done["scores"]["explanation"]
    assert done["submission"]["files"] == ["README.md"]
    assert done["submission"]["ignored"] == {"tests/conftest.py": "pytest's configuration"}
    assert "tests/conftest.py (pytest's configuration)" in str(done["scores"]["explanation"])


def test_7_an_agent_that_removes_git_then_submits_fails_its_own_task(swe_stack, docker_client):
    """``rm -rf /testbed/.git``, then submit: no patch can be taken, and that is the agent's
    doing (refused, then no submission), never an infra failure; no message names a host path."""
    green, llm = swe_stack
    llm.push(
        call("run_bash_cmd", command="rm -rf /testbed/.git"),
        call("finish", summary="done"),
        call("finish", summary="done, really"),
    )
    done = wait_terminal(
        green.url, submit_task(green.url, {"task": f"swebench:{WRAP}"})["id"], timeout=300
    )
    assert (done["status"], done["failure_kind"]) == ("failed", "agent"), done
    assert done["end_reason"] != "sandbox"
    assert "could not take the patch out of /testbed: git could not diff" in done["error"]
    assert "/var/lib/docker" not in done["error"] and "overlay2" not in done["error"]
    assert done["scores"]["resolved"] == 0.0
    assert leftover_containers(docker_client, green.owner) == []


# ---- the code under test against the judge's report: issue 52, attack 5 --------------------------


def test_5_code_the_tests_import_cannot_rewrite_the_judges_report(swe_stack):
    """The agent fixes nothing and appends to the package the tests import an ``atexit`` hook
    that, once pytest has written the judge's report, rewrites it so every outcome reads passed
    (before: the report's path was on the launcher's command line, and the task was resolved).
    The tests run as a uid of their own and the report is what the launcher's root half
    received: not resolved, the failing test reported as it failed."""
    green, llm = swe_stack
    hook = f"cat >> iniparse/__init__.py <<'EOF'\n{REWRITE_REPORT_AT_EXIT}\nEOF"
    llm.push(
        call("run_bash_cmd", command=hook),
        call("finish", summary="the values keep their delimiters"),
    )
    done = wait_terminal(
        green.url, submit_task(green.url, {"task": f"swebench:{INIPARSE}"})["id"], timeout=300
    )
    assert done["status"] == "completed", done["error"]
    assert done["submission"]["files"] == ["iniparse/__init__.py"]
    assert done["scores"]["resolved"] == 0.0, done["scores"]["explanation"]
    assert done["scores"]["fail_to_pass"] == {
        "tests/test_parser.py::test_values_may_contain_delimiters": "FAILED"
    }
    assert set(done["scores"]["pass_to_pass"].values()) == {"PASSED"}
