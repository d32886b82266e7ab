"""An ARVO plan speaks its own models (loc.json, score, ground truth) from the submission to the
score; they become JSON only at the store's edge. One judge per kind; the ground truth is built
once per task."""

from __future__ import annotations

import asyncio
import json

import pytest

from fixtures.catalog import DEFAULT_ASSETS_DIR
from services.green.kinds.arvo import judge as judge_module
from services.green.kinds.arvo.assets import check_archive, make_asset_source
from services.green.kinds.arvo.floors import bug_class, floors
from services.green.kinds.arvo.judge import ArvoScore, Judge
from services.green.kinds.arvo.kind import ArvoKind
from services.green.kinds.arvo.scoring.groundtruth import GroundTruth, ground_truth_from_patch
from services.green.kinds.base import TaskPlan, stored
from services.shared.loc import LocJson

TASK = "900001"  # crash and fix: src/entity.c:xml_decode_entity


@pytest.fixture
def kind(tmp_path) -> ArvoKind:
    if not (DEFAULT_ASSETS_DIR / TASK / "patch.diff").exists():
        pytest.skip("fixture assets not built (python -m fixtures.build)")
    return ArvoKind(make_asset_source(DEFAULT_ASSETS_DIR, tmp_path), "arvo:{id}")


def _answer(file: str, function: str, line: int) -> bytes:
    loc = {"file": file, "function": function, "line_start": line, "line_end": line}
    return json.dumps({"locations": [loc]}).encode()


def test_the_plan_reads_scores_and_stores_typed_models(kind: ArvoKind):
    plan = kind.prepare(TASK)
    assert isinstance(plan, TaskPlan)
    assert plan.judge is kind.judge  # one judge per kind, shared by its plans
    truth = plan.ground_truth()
    assert isinstance(truth, GroundTruth) and not truth.empty
    gt_file = truth.files[0]
    fn = gt_file.functions[0]
    raw = _answer(gt_file.path, fn.name, min(gt_file.lines))
    submission, errors = plan.prepared.check_submission(raw)
    assert errors == [] and isinstance(submission, LocJson)  # not a dict
    score = asyncio.run(plan.score(submission))
    assert isinstance(score, ArvoScore) and score.file_at_1 == 1.0 and score.func_at_1 == 1.0

    # at the store's edge, the same JSON as before the typed middle: the judge's TaskScore with
    # the metric names as keys, then the floors and the bug class
    judged = Judge().score(submission, plan.prepared).to_dict()
    error_txt = plan.assets["error.txt"]
    expected = {
        **judged,
        "floors": floors(error_txt, plan.prepared, kind.judge),
        "bug_class": bug_class(error_txt),
    }
    assert stored(score) == expected
    assert stored(truth) == {**truth.model_dump(mode="json"), "empty": False}
    assert stored(submission) == submission.model_dump()  # as loc.json was stored before
    assert stored(None) is None


def test_no_submission_scores_zero_with_floors(kind: ArvoKind):
    plan = kind.prepare(TASK)
    score = stored(asyncio.run(plan.score(None)))
    assert score is not None and score["file@1"] == 0.0 and score["submitted"] is False
    assert set(score["floors"]) == {"empty", "crash_frame", "crash_frame_location"}


def test_the_ground_truth_is_built_once_per_task(monkeypatch):
    task = DEFAULT_ASSETS_DIR / TASK
    if not (task / "patch.diff").exists():
        pytest.skip("fixture assets not built (python -m fixtures.build)")
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return ground_truth_from_patch(*args, **kwargs)

    monkeypatch.setattr(judge_module, "ground_truth_from_patch", counted)
    prepared = Judge().prepare(task / "patch.diff", task / "repo-vul.tar.gz")
    assert len(calls) == 1
    # the same ground truth as from the patched files' sources read up front
    patch = (task / "patch.diff").read_bytes()
    paths = [f.path for f in ground_truth_from_patch(patch).files]
    sources = check_archive(task / "repo-vul.tar.gz", escaping_symlinks="skip", read=paths).sources
    assert prepared.ground_truth == ground_truth_from_patch(patch, sources=sources)
    assert prepared.project_files and prepared.workspace_bytes > 0


def test_an_empty_patch_still_checks_the_archive(tmp_path):
    task = DEFAULT_ASSETS_DIR / TASK
    if not (task / "patch.diff").exists():
        pytest.skip("fixture assets not built (python -m fixtures.build)")
    empty = tmp_path / "patch.diff"
    empty.write_bytes(b"")
    prepared = Judge().prepare(empty, task / "repo-vul.tar.gz")
    assert prepared.ground_truth.empty and "empty-patch" in prepared.ground_truth.flags
    assert prepared.project_files  # the archive was still read and checked
