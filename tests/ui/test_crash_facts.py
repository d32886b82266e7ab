"""The bug class and crash stack the dashboard reads from sanitizer reports, and fix positions."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.catalog import load_tasks
from services.green.kinds.arvo.crash import fix_position, parse_report, report_start, source_frames
from services.green.kinds.arvo.judge import Judge
from services.shared.sanitizer import plain

REPORTS = Path(__file__).parents[1] / "purple" / "data" / "reports"


@pytest.mark.parametrize(
    ("name", "bug_class", "first_frame"),
    [
        ("gcc_asan_double_free.txt", "double-free", "buf_release"),
        ("gcc_asan_global_overflow.txt", "global-buffer-overflow", "table_get"),
        ("gcc_asan_heap_overflow.txt", "heap-buffer-overflow", "buf_fill"),
        ("gcc_asan_segv.txt", "SEGV", "run"),
        ("gcc_asan_uaf.txt", "heap-use-after-free", "buf_sum"),
        ("gcc_lsan_leak.txt", "memory-leak", "leak_name"),
        ("gcc_ubsan_null_load.txt", "null-pointer-use", "run"),
        ("gcc_ubsan_signed_overflow.txt", "signed-integer-overflow", "scale"),
    ],
)
def test_bug_class_and_crash_frame_of_real_reports(name, bug_class, first_frame):
    info = parse_report((REPORTS / name).read_text())
    assert info.bug_class == bug_class
    frames = source_frames(info)
    assert frames[0].function == first_frame
    assert all("fuzzer::" not in f.function for f in frames)


def test_only_the_first_stack_counts():
    info = parse_report((REPORTS / "gcc_asan_uaf.txt").read_text())
    indexes = [f.index for f in source_frames(info)]
    assert indexes == sorted(set(indexes)), "frames of the free/alloc stacks leaked in"


def test_a_report_without_a_sanitizer_line_is_unknown():
    assert parse_report("Segmentation fault (core dumped)\n").bug_class == "unknown"


def _gt(*functions: str) -> dict:
    return {
        "files": [{"path": "a.c", "functions": [{"name": f, "qualified": f} for f in functions]}]
    }


def test_fix_position_on_the_crash_free_and_allocation_stacks():
    text = (REPORTS / "gcc_asan_uaf.txt").read_text()  # buf_sum <- run; freed in buf_free
    info = parse_report(text)
    assert fix_position(info, _gt("buf_sum")) == "crash-frame"
    assert fix_position(info, _gt("run")) == "caller"  # on the crash stack first
    assert fix_position(info, _gt("LLVMFuzzerTestOneInput")) == "caller"
    assert fix_position(info, _gt("buf_free")) == "free-stack"
    assert fix_position(info, _gt("buf_new")) == "allocation-stack"
    assert fix_position(info, _gt("elsewhere")) == "off-stack"
    assert fix_position(info, None) == "unknown"


@pytest.mark.docker
def test_the_dashboards_fix_positions_are_the_bundled_tasks_labels(fixture_assets):
    """The plots group by the position computed from each report and ground truth; docs/tasks.md
    and the reports break down by each task.toml's label: the same groups, task by task (never
    "2 frames up" or "not in the stack" where the label says caller or free-stack)."""
    for task in load_tasks():
        where = fixture_assets / str(task.id)
        gt = Judge().prepare(where / "patch.diff", where / "repo-vul.tar.gz").ground_truth
        computed = fix_position(parse_report((where / "error.txt").read_text()), gt.to_dict())
        assert computed == task.fix_position, task.id


@pytest.mark.docker
def test_fixture_tasks_bug_classes_match_their_catalog(fixture_assets: Path):
    for task in load_tasks():
        report = fixture_assets / str(task.id) / "error.txt"
        assert parse_report(report.read_text()).bug_class == task.crash_type, task.id


@pytest.mark.parametrize("name", sorted(p.name for p in REPORTS.glob("*.txt")))
def test_the_report_opens_at_the_sanitizers_own_lines(name):
    """The dashboard folds what precedes the sanitizer's report (libFuzzer's INFO lines, the
    program's output): its box opens at the ERROR line, the first frame just below."""
    text = (REPORTS / name).read_text()
    shown = ("INFO: Seed: 1\nRunning: /tmp/poc\n" + text)[
        report_start("INFO: Seed: 1\nRunning: /tmp/poc\n" + text) :
    ]
    first = shown.splitlines()[0]
    assert "Sanitizer" in first or "runtime error" in first, first
    assert "INFO:" not in shown.split("#0", 1)[0]
    assert "#0 " in "\n".join(shown.splitlines()[:6]), shown[:600]


def test_the_bundled_reports_open_below_libfuzzers_lines(fixture_assets: Path):
    for task in load_tasks():
        text = plain((fixture_assets / str(task.id) / "error.txt").read_bytes())  # as shown
        start = report_start(text)
        assert "INFO:" in text[:start] and "INFO:" not in text[start:], task.id
        assert "#0 " in "\n".join(text[start:].splitlines()[:8]), (task.id, text[start:][:500])
