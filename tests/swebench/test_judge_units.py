"""The judge's pure pieces: pytest output parsing, the judge's own report, patch paths and what
of a patch the judge applies, the test-reset script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from services.swebench.instances import SweInstance
from services.swebench.judge import (
    TestRun,
    parse_pytest_log,
    patch_files,
    read_judge_report,
    reset_tests_script,
)
from services.swebench.patch_filter import restrict
from services.swebench.runner import count_patch_lines

from .test_swe_tools import GIT_ENV, git

PYTEST_RA = """\
============================= test session starts ==============================
collected 6 items

tests/test_a.py ..F.                                                     [ 66%]
tests/test_b.py .E                                                       [100%]

==================================== ERRORS ====================================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_a.py::test_two[1.2.3-rc.1]
PASSED tests/test_a.py::test_spaced[a - b]
FAILED tests/test_a.py::test_three - AssertionError: assert ['aaa', 'bbb'] == ['aaa bbb']
PASSED tests/test_b.py::test_teardown
ERROR tests/test_b.py::test_teardown - RuntimeError: boom
XFAIL tests/test_b.py::test_known - reason: later
XPASS tests/test_b.py::test_lucky
SKIPPED [1] tests/test_b.py:12: no network
ERROR tests/test_c.py - ImportError: cannot import name 'x'
==================== 1 failed, 4 passed, 1 error in 0.12s =====================
"""


def test_parse_pytest_ra_summary() -> None:
    got = parse_pytest_log(PYTEST_RA)
    assert got == {
        "tests/test_a.py::test_one": "PASSED",
        "tests/test_a.py::test_two[1.2.3-rc.1]": "PASSED",
        "tests/test_a.py::test_spaced[a - b]": "PASSED",
        "tests/test_a.py::test_three": "FAILED",
        "tests/test_b.py::test_teardown": "ERROR",  # the worst status wins
        "tests/test_b.py::test_known": "PASSED",  # xfail counts as passed
        "tests/test_b.py::test_lucky": "FAILED",
        "tests/test_c.py": "ERROR",  # a collection error
    }
    run = TestRun(got, PYTEST_RA, 1)
    assert run.status_of("tests/test_c.py::test_never_collected") == "ERROR"


def test_parse_verbose_lines() -> None:
    text = "tests/t.py::test_x PASSED   [ 50%]\ntests/t.py::test_y[p0] FAILED  [100%]\n"
    assert parse_pytest_log(text) == {
        "tests/t.py::test_x": "PASSED",
        "tests/t.py::test_y[p0]": "FAILED",
    }


def test_patch_files_and_line_counts() -> None:
    patch = (
        "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n"
        "diff --git a/old.py b/new.py\nsimilarity index 90%\nrename from old.py\nrename to new.py\n"
        "diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1,2 @@\n+x\n+y\n"
    )
    assert patch_files(patch) == ["src/x.py", "old.py", "new.py", "tests/test_new.py"]
    assert count_patch_lines(patch) == 4
    assert patch_files("") == []


def test_reset_tests_script_restores_and_removes(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_old.py").write_text("old\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "i"]):
        git(repo, *args)
    (repo / "tests" / "test_old.py").write_text("changed by the model\n")
    (repo / "tests" / "test_new.py").write_text("left over\n")
    instance = SweInstance(
        instance_id="a__b-1",
        repo="a/b",
        base_commit="HEAD",
        problem_statement="x",
        test_patch=(
            "diff --git a/tests/test_old.py b/tests/test_old.py\n"
            "diff --git a/tests/test_new.py b/tests/test_new.py\n"
        ),
    )
    script = reset_tests_script(instance, workdir=str(repo))
    subprocess.run(["bash", "-c", script], env=GIT_ENV, check=True)
    assert (repo / "tests" / "test_old.py").read_text() == "old\n"
    assert not (repo / "tests" / "test_new.py").exists()


def section(path: str, body: str = "@@ -1 +1 @@\n-a\n+b\n", header: str = "") -> str:
    return f"diff --git a/{path} b/{path}\n{header}--- a/{path}\n+++ b/{path}\n{body}"


def test_the_judge_applies_changes_to_code_and_takes_the_rest_from_the_task() -> None:
    """What decides how the tests run is the task's: test files, pytest's configuration, Python's
    start-up hooks, installed metadata, a module standing in for pytest, git's files, links."""
    instance = SweInstance(
        instance_id="a__b-1",
        repo="a/b",
        base_commit="HEAD",
        problem_statement="x",
        test_patch=section("pkg/checks/verify.py"),
        FAIL_TO_PASS=["t/spec_parse.py::test_x"],
    )
    protected = {
        "conftest.py": "pytest's configuration",
        "src/pkg/conftest.py": "pytest's configuration",
        "pyproject.toml": "pytest's configuration",
        "sub/setup.cfg": "pytest's configuration",
        "tox.ini": "pytest's configuration",
        "pytest.ini": "pytest's configuration",
        "tests/helpers.py": "a test file",
        "pkg/test_util.py": "a test file",
        "pkg/util_test.py": "a test file",
        "pkg/checks/verify.py": "a test file of the task",
        "t/spec_parse.py": "a test file of the task",
        "sitecustomize.py": "Python start-up code",
        "lib/evil.pth": "Python start-up code",
        "pkg.egg-info/entry_points.txt": (
            "installed package metadata (its entry points load pytest plugins)"
        ),
        "pytest.py": "it would stand in for the test runner",
        "_pytest/runner.py": "it would stand in for the test runner",
        ".git/config": "git's own files",
    }
    code = ["src/pkg/core.py", "django/test/utils.py", "docs/conf.py", "src/caf\u00e9.py"]
    patch = "From 1234 Mon Sep 17 00:00:00 2001\nSubject: preamble\n\n"
    patch += "".join(section(p) for p in [*code[:3], *protected])
    patch += section(
        "link", "@@ -0,0 +1 @@\n+src\n\\ No newline at end of file\n", "new file mode 120000\n"
    )
    patch += 'diff --git "a/src/caf\\303\\251.py" "b/src/caf\\303\\251.py"\n@@ -1 +1 @@\n-a\n+b\n'
    # a removed line that reads like a file header is content; a header after a hunk is a file
    patch += section("src/pkg/sql.py", "@@ -1,2 +1,1 @@\n--- a/conftest.py\n ctx\n")
    patch += "--- a/tests/conftest.py\n+++ b/tests/conftest.py\n@@ -1 +1 @@\n-a\n+b\n"
    kept = restrict(patch, instance)
    assert kept.files == [*code, "src/pkg/sql.py"]
    assert kept.ignored == {
        **protected,
        "link": "a symbolic link or a submodule",
        "tests/conftest.py": "pytest's configuration",
    }
    assert "Subject" not in kept.patch and "tests/conftest.py" not in kept.patch
    assert "--- a/conftest.py\n ctx\n" in kept.patch
    assert restrict(kept.patch, instance) == type(kept)(kept.patch, kept.files, {})
    assert patch_files(kept.patch) == kept.files


def test_statuses_come_from_the_judges_report_and_a_faked_pass_is_caught() -> None:
    def phase(test: str, when: str, outcome: str, **more: bool) -> str:
        return json.dumps({"id": test, "when": when, "outcome": outcome, **more})

    lines = [
        phase("t.py::ok", "setup", "passed"),
        phase("t.py::ok", "call", "passed"),
        phase("t.py::ok", "teardown", "passed"),
        phase("t.py::fails", "call", "failed", raised=True),
        phase("t.py::faked", "call", "passed", raised=True),
        phase("t.py::setup_error", "setup", "failed", raised=True),
        phase("t.py::teardown_error", "call", "passed"),
        phase("t.py::teardown_error", "teardown", "failed", raised=True),
        phase("t.py::xfail", "call", "skipped", xfail=True, raised=True),
        phase("t.py::xpass", "call", "passed", xfail=True),
        phase("t.py::skipped", "setup", "skipped", raised=True),
        "PASSED t.py::printed",  # not the plugin's: a test's own output
        phase("t.py::fails", "call", "passed"),  # a later line cannot better a status
        "{not json",
    ]
    statuses, tampered = read_judge_report("\n".join(lines))
    assert statuses == {
        "t.py::ok": "PASSED",
        "t.py::fails": "FAILED",
        "t.py::faked": "FAILED",
        "t.py::setup_error": "ERROR",
        "t.py::teardown_error": "ERROR",
        "t.py::xfail": "PASSED",
        "t.py::xpass": "FAILED",
        "t.py::skipped": "FAILED",
    }
    assert tampered == ["t.py::faked"]
