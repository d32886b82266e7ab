"""The judge's pure pieces: pytest output parsing, patch paths, the test-reset script."""

from __future__ import annotations

import subprocess
from pathlib import Path

from services.swebench.instances import SweInstance
from services.swebench.judge import (
    TestRun,
    parse_pytest_log,
    patch_files,
    reset_tests_script,
)
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
