"""The stack-trace analyst: ranking, the C function heuristic, and whole runs on a local workspace."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from services.purple.analyst.cfunc import (
    FunctionSpan,
    awk_outline,
    enclosing_function,
    parse_numbered,
    tight_span,
)
from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.protocols import Policy, TaskContext
from services.purple.signals import TaskEnded
from services.shared.sanitizer import parse_report
from tests.purple import sample_reports as R
from tests.support.local_env import LocalShellEnvironment, make_workspace

DATA = Path(__file__).parent / "data"


def ranked(report_text: str) -> list[tuple[str, int]]:
    return [
        (c.function or c.file.rsplit("/", 1)[-1], c.line)
        for c in StackTraceAnalyst().rank(parse_report(report_text))
    ]


def test_analyst_is_a_policy() -> None:
    assert isinstance(StackTraceAnalyst(), Policy)


def test_rank_overflow_puts_the_allocation_site_second() -> None:
    assert ranked(R.ASAN_HEAP_OVERFLOW) == [
        ("wrap_lines_measure", 1902),
        ("ass_shaper_new", 1012),
        ("wrap_lines_smart", 1958),
        ("ass_render_event", 2614),
        ("ass_render_frame", 2901),
        ("ass_renderer_init", 87),
    ]


def test_rank_use_after_free_interleaves_free_and_alloc_sites() -> None:
    assert ranked(R.ASAN_UAF_CPP)[:5] == [
        ("Json::Value::operator=", 512),
        ("Json::Reader::~Reader", 90),
        ("Json::Reader::readValue", 260),
        ("Json::Reader::pushValue", 330),
        ("Json::Reader::parse", 111),
    ]


def test_rank_double_free_leads_with_the_first_free_off_the_crash_stack() -> None:
    assert ranked(R.ASAN_DOUBLE_FREE) == [
        ("xmlParseEndTag", 9901),
        ("xmlFreeNode", 3890),
        ("xmlParseElement", 10120),
        ("xmlNewNode", 2201),
    ]


def test_rank_other_bug_classes() -> None:
    assert ranked(R.MSAN) == [
        ("png_read_row", 492),
        ("png_malloc_base", 91),
        ("png_read_image", 707),
    ]
    assert ranked(R.MSAN_STACK_ORIGIN) == [("check_sum", 20), ("compute", 9)]
    # the stack object's function comes from the source (the frame may be an inliner)
    assert ranked(R.ASAN_STACK_BUFFER_OVERFLOW) == [("parse_header", 77), ("header.c", 62)]
    assert ranked(R.ASAN_GLOBAL_OVERFLOW) == [("lookup_code", 44), ("codes.c", 12), ("decode", 210)]
    assert ranked(R.UBSAN_NO_STACK) == [("shift.c", 33)]
    assert ranked(R.LSAN) == [("dict_new", 40), ("parse_dict", 300)]
    assert ranked(R.ASAN_STACK_OVERFLOW) == [("parse_expr", 140), ("parse_expr", 88)]
    assert ranked(R.NO_FRAMES) == []


# ---- the C heuristic ------------------------------------------------------------------------

C_SOURCE = """\
#include <stdio.h>
#define X 1

struct s { int a; };

static int
foo(int a,
    int b)
{
	int x = a;
	if (a) {
		return b;
	}
out:
	return x;
}

int bar(void) {
  return foo(1, 2);
}

static const char *tab[] = {
  "a",
};
"""


@pytest.mark.parametrize(
    "line, start, end, name, span",
    [
        (10, 6, 16, "foo", (9, 12)),
        (15, 6, 16, "foo", (13, 16)),
        (16, 6, 16, "foo", (14, 16)),
        (19, 18, 20, "bar", (18, 20)),
        (24, None, 24, None, (22, 24)),
    ],
)
def test_enclosing_function(tmp_path: Path, line, start, end, name, span) -> None:
    path = tmp_path / "a.c"
    path.write_text(C_SOURCE)
    out = subprocess.run(
        ["bash", "-c", awk_outline(str(path), line)], capture_output=True, text=True, check=True
    ).stdout
    fn = enclosing_function(parse_numbered(out), line)
    assert (fn.start, fn.end, fn.name) == (start, end, name)
    assert tight_span(line, fn) == span


def test_tight_span_without_function() -> None:
    assert tight_span(1, FunctionSpan(None, None, None, None)) == (1, 3)
    assert tight_span(50, FunctionSpan(None, None, None, None), context=5) == (45, 55)


# ---- whole runs on the demo project with the real gcc reports -------------------------------


def demo_task(tmp_path: Path, report: bytes, **env_kw) -> tuple[TaskContext, LocalShellEnvironment]:
    paths = make_workspace(tmp_path, project="demo", error_txt=report)
    shutil.copytree(DATA / "demo_src", Path(paths.source_dir) / "demo", dirs_exist_ok=True)
    env = LocalShellEnvironment(paths, **env_kw)
    return TaskContext(task_id="task-1", description="", env=env, paths=paths), env


# report -> the expected locations (file, function, a line the span must contain), in order;
# the demo's fuzz/fuzz.c is the fuzz target's file: it is answered only when no other project
# frame is on the stack (gcc_asan_segv)
EXPECTED = {
    "gcc_asan_heap_overflow": [
        ("lib/buf.c", "buf_fill", 18),
        ("lib/buf.c", "buf_new", 10),
    ],
    # buf_free frees two fields and buf_new makes two blocks: both are wrappers (read from
    # their bodies), yet the frame above them is the fuzz target's: the wrappers are answered
    "gcc_asan_uaf": [
        ("lib/buf.c", "buf_sum", 23),
        ("lib/buf.c", "buf_free", 32),
        ("lib/buf.c", "buf_new", 8),
    ],
    "gcc_asan_double_free": [
        ("lib/buf.c", "buf_release", 38),
        ("lib/buf.c", "buf_new", 10),
    ],
    "gcc_asan_stack_buffer_overflow": [("lib/misc.c", "stack_copy", 39)],
    "gcc_asan_segv": [("fuzz/fuzz.c", "run", 29)],
    "gcc_asan_stack_overflow": [("lib/misc.c", "recurse", 17)],
    "gcc_lsan_leak": [("lib/misc.c", "leak_name", 30)],
    "gcc_ubsan_signed_overflow": [("lib/misc.c", "scale", 24)],
}


# spatial bugs with two or more answered project frames: one more command reads the frames'
# code (the demo's chains run into fuzz/fuzz.c, which is not answered: none here; the trail is
# tested in test_analyst_dataflow.py)
VALUE_TRAIL: set[str] = set()
# lifetime bugs: one more command reads the bodies of the free/alloc stacks' frames
LIFETIME = {"gcc_asan_uaf", "gcc_asan_double_free"}
# overflows of a buffer allocated in the project: its allocation site is read (size helpers)
ALLOC_READ = {"gcc_asan_heap_overflow"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_analyst_submits_ranked_tight_spans(tmp_path: Path, name: str) -> None:
    task, env = demo_task(tmp_path, (DATA / "reports" / f"{name}.txt").read_bytes())
    result = await StackTraceAnalyst(trajectory_dir=tmp_path / "traj").run(task)
    assert result.status == "submitted", result.reason
    got = result.submission.locations
    assert [(loc.file, loc.function) for loc in got] == [(f, fn) for f, fn, _ in EXPECTED[name]]
    for loc, (_, _, line) in zip(got, EXPECTED[name], strict=True):
        assert loc.line_start <= line <= loc.line_end and loc.line_end - loc.line_start <= 4
    # green's view: what was written is what was accepted
    assert (
        json.loads(Path(task.paths.submission).read_text())["locations"][0]["file"] == got[0].file
    )
    # list + report, resolve, [read the frames the bad value flows through], [read the
    # free/alloc stacks' bodies], [read the allocation site], submit
    n = 3 + (name in VALUE_TRAIL) + (name in LIFETIME) + (name in ALLOC_READ)
    assert result.stats.commands == len(result.command_history) == len(env.commands) == n
    # steps are LLM turns: the analyst takes none
    assert result.stats.steps == 0 and env.submits[0][0].commands == n
    traj = json.loads(Path(result.trajectory_path).read_text())
    assert traj["result"]["status"] == "submitted" and traj["policy"] == "stack-trace-analyst"


async def test_analyst_finds_the_report_after_megabytes_of_noise(tmp_path: Path) -> None:
    noise = b"".join(
        b"INFO: #%d NEW cov: 12 ft: 12 corp: 1/1b exec/s: 0 rss: 30Mb \xff\n" % i
        for i in range(80_000)
    )
    report = noise + (DATA / "reports" / "gcc_asan_uaf.txt").read_bytes()
    task, _ = demo_task(tmp_path, report, output_limit=32 * 1024)
    result = await StackTraceAnalyst().run(task)
    assert result.status == "submitted"
    assert result.submission.locations[0].function == "buf_sum"


async def test_analyst_resolves_a_differently_named_top_folder(tmp_path: Path) -> None:
    task, _ = demo_task(tmp_path, (DATA / "reports" / "gcc_asan_segv.txt").read_bytes())
    src = Path(task.paths.source_dir)
    (src / "demo").rename(src / "demo-1.2.3")
    result = await StackTraceAnalyst().run(task)
    assert result.status == "submitted"
    assert result.submission.locations[0].file == "fuzz/fuzz.c"


async def test_analyst_retries_with_the_crash_site_when_refused(tmp_path: Path) -> None:
    task, env = demo_task(
        tmp_path, (DATA / "reports" / "gcc_asan_uaf.txt").read_bytes(), refuse_first=1
    )
    result = await StackTraceAnalyst().run(task)
    assert result.status == "submitted" and len(result.submission.locations) == 1
    assert len(env.submits) == 2


async def test_analyst_without_usable_frames_reports_an_error(tmp_path: Path) -> None:
    task, env = demo_task(tmp_path, R.NO_FRAMES.encode())
    result = await StackTraceAnalyst().run(task)
    assert result.status == "error" and "no project frame" in result.reason
    assert env.submits == []


async def test_analyst_when_files_are_missing(tmp_path: Path) -> None:
    task, _env = demo_task(tmp_path, R.ASAN_SEGV.encode())  # /src/proj/... is not in the tree
    result = await StackTraceAnalyst().run(task)
    assert result.status == "error" and "none of the candidate files" in result.reason


async def test_analyst_stops_when_green_ends_the_task(tmp_path: Path) -> None:
    task, env = demo_task(tmp_path, R.ASAN_SEGV.encode())

    async def ended(command: str, timeout: float | None = None):
        raise TaskEnded("task cancelled by green")

    env.execute = ended  # type: ignore[method-assign]
    result = await StackTraceAnalyst().run(task)
    assert result.status == "limits" and "cancelled" in result.reason


def test_enclosing_function_returning_a_struct_pointer(tmp_path: Path) -> None:
    path = tmp_path / "b.c"
    path.write_text(
        "struct item *list_find(struct list *l, int key)\n{\n\treturn l->head;\n}\n"
        "struct item {\n\tint a;\n};\n"
    )
    out = subprocess.run(
        ["bash", "-c", awk_outline(str(path), 3)], capture_output=True, text=True, check=True
    ).stdout
    fn = enclosing_function(parse_numbered(out), 3)
    assert (fn.start, fn.end, fn.name) == (1, 4, "list_find")
    out = subprocess.run(
        ["bash", "-c", awk_outline(str(path), 6)], capture_output=True, text=True, check=True
    ).stdout
    assert enclosing_function(parse_numbered(out), 6).name is None  # a struct body
