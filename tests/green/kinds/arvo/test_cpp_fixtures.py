"""The judge on the C++ fixture tasks (fixtures/arvo/900013, 900014): the ground truth names the
method the fix changed, a perfect answer scores 1 in every spelling an agent or a trace uses,
and a wrong class or method scores 0. Needs git (patch.diff is made as the builder makes it)."""

from __future__ import annotations

import shutil

import pytest

from fixtures.build import make_patch_diff
from fixtures.catalog import get_task
from services.green.kinds.arvo.scoring import score
from services.green.kinds.arvo.scoring.groundtruth import ground_truth_from_patch
from services.shared.loc import LocJson

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

CASES = {
    # export-macro class, inline method in a public header
    900013: (
        "include/tokstream/reader.h",
        "tokstream::Reader::u16",
        32,
        [
            "u16",
            "Reader::u16",
            "tokstream::Reader::u16",
            "tokstream::Reader::u16(unsigned long) const",
            "uint16_t tokstream::Reader::u16(size_t at) const",
            "u16()",
        ],
        ["Reader::u8", "tokstream::Writer::u16", "tokstream::Reader", "summarize", "u8"],
    ),
    # the call operator, defined out of line in a .cpp file
    900014: (
        "src/grid.cpp",
        "gridpaint::Grid::operator()",
        14,
        [
            "operator()",
            "Grid::operator()",
            "gridpaint::Grid::operator()",
            "gridpaint::Grid::operator()(int, int)",
            "uint8_t& gridpaint::Grid::operator()(int x, int y)",
            "Grid::operator ()",
        ],
        ["Canvas::operator()", "gridpaint::Grid::operator[]", "Grid::Grid", "paint", "operator"],
    ),
}


def _ground_truth(task_id: int):
    task = get_task(task_id)
    return task, ground_truth_from_patch(make_patch_diff(task), source_root=task.src_dir)


def _score(gt, project: str, file: str, function: str, line: int) -> dict[str, float]:
    sub = LocJson.model_validate(
        {"locations": [{"file": file, "function": function, "line_start": line, "line_end": line}]}
    )
    return score(sub, gt, project).metrics()


@pytest.mark.parametrize("task_id", sorted(CASES))
def test_ground_truth_names_the_fixed_method(task_id):
    task, gt = _ground_truth(task_id)
    path, qualified, line, _, _ = CASES[task_id]
    assert task.fix_file == path and task.fix_function == qualified
    assert [f.path for f in gt.files] == [path]
    assert gt.files[0].lines == [line]
    assert [f.qualified for f in gt.files[0].functions] == [qualified]


@pytest.mark.parametrize("task_id", sorted(CASES))
def test_perfect_answer_scores_one_in_every_spelling(task_id):
    task, gt = _ground_truth(task_id)
    path, _, line, good, _ = CASES[task_id]
    for file in (
        path,
        f"/src/{task.project}/{path}",
        f"./{path}",
        f"src-vul/{task.project}/{path}",
    ):
        for spelling in good:
            m = _score(gt, task.project, file, spelling, line)
            assert (m["file@1"], m["func@1"], m["line@1"]) == (1.0, 1.0, 1.0), (file, spelling)


@pytest.mark.parametrize("task_id", sorted(CASES))
def test_wrong_class_or_method_scores_zero(task_id):
    task, gt = _ground_truth(task_id)
    path, _, line, _, bad = CASES[task_id]
    for spelling in bad:
        m = _score(gt, task.project, path, spelling, line)
        assert (m["file@1"], m["func@1"]) == (1.0, 0.0), spelling
