"""tests/support/parallel.py: the units the suite is split into, and the order they are handed out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import parallel

ROOT = Path(__file__).resolve().parent.parent

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.store.test_queue" name="test_a" time="0.25" />
<testcase classname="tests.store.test_queue.TestLeases" name="test_b" time="1.5" />
<testcase classname="tests.e2e.test_compose" name="test_up" time="40.0" />
<testcase classname="tests.e2e.test_demo_loop" name="test_again" time="2.0" />
<testcase classname="tests.sandbox.test_engine_pool" name="test_spread" time="3.04" />
</testsuite></testsuites>
"""


def test_a_module_is_a_unit_unless_it_shares_a_worker() -> None:
    assert parallel.unit_of("tests/store/test_queue.py::test_a[x]") == "tests/store/test_queue.py"
    assert parallel.unit_of("tests/e2e/test_compose.py::test_up") == "e2e"
    assert parallel.unit_of("tests/sandbox/test_disk_quota.py::test_cap") == "second-dockerd"


def test_units_with_no_recorded_time_go_first_then_the_longest() -> None:
    seconds = {"a.py": 3.0, "b.py": 40.0, "c.py": 0.5}
    order = parallel.longest_first(["a.py", "new.py", "c.py", "b.py", "newer.py"], seconds)
    assert order == ["new.py", "newer.py", "b.py", "a.py", "c.py"]


def test_a_junit_report_gives_each_units_total(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(REPORT)
    out = tmp_path / "seconds.json"
    parallel.main([str(report), str(out)])
    assert json.loads(out.read_text()) == {
        "e2e": 42.0,
        "second-dockerd": 3.0,
        "tests/store/test_queue.py": 1.8,
    }
    assert list(json.loads(out.read_text())) == [
        "e2e",
        "second-dockerd",
        "tests/store/test_queue.py",
    ]


def test_the_command_without_a_report_says_how_to_call_it_and_writes_nothing(
    tmp_path: Path,
) -> None:
    recorded = parallel.UNIT_SECONDS.read_bytes()
    for argv in ([], [str(tmp_path / "missing.xml")], ["a.xml", "b.json", "c"]):
        with pytest.raises(SystemExit, match=r"usage: python -m tests\.support\.parallel"):
            parallel.main(argv)
    assert parallel.UNIT_SECONDS.read_bytes() == recorded


def test_the_recorded_units_are_the_suites_own() -> None:
    """A renamed or removed module leaves no stale entry; refresh the file from a CI run's report
    (``uv run python -m tests.support.parallel report.xml``)."""
    recorded = parallel.read_unit_seconds()
    shared = set(parallel.SHARED_WORKER.values())
    stale = [u for u in recorded if u not in shared and not (ROOT / u).is_file()]
    assert stale == []
    assert len(recorded) > 50 and all(s >= 0 for s in recorded.values())
