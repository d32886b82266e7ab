"""The parser and the analyst on the real clang/libFuzzer reports of the locally built fixture
tasks (fixtures/catalog.py, build/assets/<id>/). Skipped when the assets are not built."""

import shutil
import tarfile
from pathlib import Path

import pytest

from services.green.kinds.arvo.scoring.functions import list_functions
from services.purple.analyst.policy import StackTraceAnalyst
from services.purple.protocols import TaskContext
from services.shared.sanitizer import parse_report
from services.shared.sanitizer.frame_roles import project_frames
from services.shared.sanitizer.frames import split_src_path
from tests.support.local_env import LocalShellEnvironment, make_workspace

catalog = pytest.importorskip("fixtures.catalog")
TASKS = [t for t in catalog.load_tasks() if (t.assets_dir() / "error.txt").exists()]
pytestmark = pytest.mark.skipif(
    not TASKS, reason="fixture assets not built (python -m fixtures.build)"
)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: str(t.id))
def test_real_report_parses(task) -> None:
    report = parse_report((task.assets_dir() / "error.txt").read_bytes())
    assert report.sanitizer == "AddressSanitizer"
    assert report.crash_type == task.crash_type
    top = project_frames(report.crash_stack)[0]
    assert top.function_name == task.crash_name
    assert split_src_path(top.file) == (task.project, task.crash_file)
    assert report.summary.split(" in ")[-1].strip() == task.expected_summary_function


async def run_analyst(task, tmp_path: Path):
    assets = task.assets_dir()
    paths = make_workspace(tmp_path, error_txt=(assets / "error.txt").read_bytes())
    shutil.rmtree(paths.source_dir)
    with tarfile.open(assets / "repo-vul.tar.gz") as tar:
        top = {Path(m.name).parts[0] for m in tar.getmembers()}
        tar.extractall(tmp_path if top == {"src-vul"} else Path(paths.source_dir), filter="data")
    return await StackTraceAnalyst().run(
        TaskContext(
            task_id=str(task.id), description="", env=LocalShellEnvironment(paths), paths=paths
        )
    )


@pytest.mark.parametrize("task", TASKS, ids=lambda t: str(t.id))
async def test_analyst_on_real_task(task, tmp_path: Path) -> None:
    result = await run_analyst(task, tmp_path)
    assert result.status == "submitted", result.reason
    first = result.submission.locations[0]
    if task.crash_type == "double-free":  # the first free leads (see StackTraceAnalyst.rank)
        report = parse_report((task.assets_dir() / "error.txt").read_bytes())
        freed = project_frames(report.stack("freed"))[0]
        assert first.function == freed.function_name
        assert first.file == split_src_path(freed.file)[1]
    elif first.description.startswith("origin of the out-of-bounds value"):
        # the bad index was followed up the stack: the crash site comes right after its origin
        second = result.submission.locations[1]
        assert (second.file, second.function) == (task.crash_file, task.crash_name)
        assert (first.file, first.function) != (task.crash_file, task.crash_name)
    elif "rounds" in first.description and first.description.startswith("computes the size"):
        # a rounding mismatch put the buffer's size helper first: it is the fix, and the crash
        # site follows it
        assert (first.file, first.function) == (task.fix_file, task.fix_function)
        second = result.submission.locations[1]
        assert (second.file, second.function) == (task.crash_file, task.crash_name)
    else:
        assert (first.file, first.function) == (task.crash_file, task.crash_name)
    assert 1 <= len(result.submission.locations) <= 5
    assert all(loc.line_end - loc.line_start < 50 for loc in result.submission.locations)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: str(t.id))
async def test_analyst_never_submits_lines_outside_the_function_or_the_file(
    task, tmp_path: Path
) -> None:
    """Checked with the judge's own parser (tree-sitter): a location that names a function lies
    inside that function; every span lies inside its file (900009 prints line-less frames).
    The C++ fixtures once failed it (900013's u16, a method inside its class body, was unknown
    to the column-0 outline: span 30-34 for 31-34; 900014's Grid::Grid 5-7 for 5-6): the
    analyst reads enclosing functions with tree-sitter now."""
    result = await run_analyst(task, tmp_path)
    root = tmp_path / "src-vul" / task.project
    for loc in result.submission.locations:
        source = (root / loc.file).read_text(errors="replace")
        assert 1 <= loc.line_start <= loc.line_end <= len(source.splitlines()), loc
        if loc.function:
            spans = [
                f
                for f in list_functions(source, loc.file)
                if loc.function in (f.name, f.qualified)  # C++: the trace's qualified name
            ]
            assert spans, f"{loc.function} is not defined in {loc.file}"
            assert any(f.contains(loc.line_start, loc.line_end) for f in spans), loc


async def test_analyst_file_level_hit_rate(tmp_path: Path) -> None:
    """A stack-only baseline should name the fixed file in its top 5 for most tasks."""
    hits = 0
    for task in TASKS:
        result = await run_analyst(task, tmp_path / str(task.id))
        hits += task.fix_file in {loc.file for loc in result.submission.locations}
    assert hits / len(TASKS) >= 0.5, f"file@5 = {hits}/{len(TASKS)}"
