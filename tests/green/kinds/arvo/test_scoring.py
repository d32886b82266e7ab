"""Scoring: every pitfall of the peer benchmark is closed, and each score explains itself."""

from __future__ import annotations

import enum
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from services.green.kinds.arvo.scoring import (
    Aggregate,
    TaskScore,
    aggregate,
    ground_truth_from_patch,
    score,
)
from services.green.kinds.arvo.scoring.groundtruth import GTFunction
from services.green.kinds.arvo.scoring.metrics import (
    METRICS,
    OWN_METRICS,
    function_names,
    names_match,
    path_candidates,
)
from services.shared.loc import LocJson, normalize_path
from services.shared.outcome import TaskOutcome

DATA = Path(__file__).parent / "data"
PROJECT = DATA / "gt_project"

ONE_LINE_FIX = """\
diff --git a/src/util.c b/src/util.c
index 252150f..2d92bb0 100644
--- a/src/util.c
+++ b/src/util.c
@@ -2,6 +2,6 @@

 int util_copy(char *dst, const char *src, size_t n)
 {
-  memcpy(dst, src, n);
+  memmove(dst, src, n);
   return 0;
 }
"""


def loc(file: str, start: int, end: int | None = None, function: str | None = None) -> dict:
    return {"file": file, "function": function, "line_start": start, "line_end": end or start}


def sub(*locations: dict) -> LocJson:
    return LocJson.model_validate({"reasoning": "test", "locations": list(locations)})


@pytest.fixture(scope="module")
def one_line_gt():
    return ground_truth_from_patch(ONE_LINE_FIX, PROJECT)


@pytest.fixture(scope="module")
def multi_gt():
    return ground_truth_from_patch(
        (DATA / "patches/multi_file_format_patch.diff").read_text(), PROJECT
    )


ALL_ONE = {
    "file@1": 1.0,
    "file@5": 1.0,
    "func@1": 1.0,
    "func@5": 1.0,
    "line@1": 1.0,
    "line@5": 1.0,
    "iou": 1.0,
}
ALL_ZERO = dict.fromkeys(ALL_ONE, 0.0)
EVERY_ZERO = dict.fromkeys(METRICS, 0.0)
"""Ours and FLBench's (tests/green/kinds/arvo/test_flbench.py checks FLBench's)."""


def own(s: TaskScore) -> dict[str, float]:
    """Our seven metrics of a score."""
    return {m: v for m, v in s.metrics().items() if m in OWN_METRICS}


# --- the pitfalls -----------------------------------------------------------------------------


def test_perfect_one_line_answer_scores_one_everywhere(one_line_gt):
    s = score(sub(loc("src/util.c", 5, function="util_copy")), one_line_gt, "proj")
    assert own(s) == ALL_ONE
    # the peer pads ground truth with context lines: the same answer would get IoU 1/7 = 0.14
    assert one_line_gt.files[0].lines == [5]


def test_top_5_only_listing_50_locations_earns_nothing_more(one_line_gt):
    wrong = [loc("src/util.c", 1)] * 5
    right = loc("src/util.c", 5, function="util_copy")
    top5_only = score(sub(*wrong), one_line_gt)
    padded = score(sub(*wrong, *([right] * 45)), one_line_gt)
    assert own(padded) == own(top5_only)
    assert padded.metrics()["line@5"] == 0.0 and padded.metrics()["iou"] == 0.0
    assert padded.n_locations == 50 and len(padded.locations) == 5
    assert any("only the top 5 are scored" in e for e in padded.explanation)
    # the same right answer at rank 5 does count
    at5 = score(sub(*wrong[:4], right), one_line_gt)
    # FLBench scores the set, with no cut: the 45 right answers past rank 5 count there
    assert padded.line_recall == 1.0 and top5_only.line_recall == 0.0
    assert own(at5) == {**ALL_ONE, "file@1": 1.0, "func@1": 0.0, "line@1": 0.0}


def test_same_basename_in_another_directory_does_not_match(one_line_gt):
    s = score(sub(loc("lib/util.c", 5, function="util_copy")), one_line_gt)
    assert own(s) == ALL_ZERO
    assert s.line_recall == 1.0 and s.line_recall_path == 0.0  # FLBench matches basenames
    assert "never by basename" in " ".join(s.locations[0].notes)
    s = score(sub(loc("util.c", 5, function="util_copy")), one_line_gt)
    assert own(s) == ALL_ZERO


@pytest.mark.parametrize(
    "path",
    [
        "src/util.c",
        "./src/util.c",
        "/src/proj/src/util.c",
        "src-vul/proj/src/util.c",
        "/workspace/src-vul/proj/src/util.c",
        "proj/src/util.c",  # relative to /src or src-vul
        "src\\util.c",
        "src/util.c:5",
        "`src/util.c`",
    ],
)
def test_path_conventions_match(one_line_gt, path):
    s = score(sub(loc(path, 5, function="util_copy")), one_line_gt, "proj")
    assert own(s) == ALL_ONE, s.explanation


@pytest.mark.parametrize(
    "path", ["/src/other/src/util.c", "src-vul/proj/lib/util.c", "src/util.cc", "src/util.c.orig"]
)
def test_other_paths_do_not_match(one_line_gt, path):
    assert own(score(sub(loc(path, 5)), one_line_gt, "proj")) == ALL_ZERO


def test_span_longer_than_50_lines_earns_no_line_credit(multi_gt):
    # 51 lines around src/parse.c:20
    s = score(sub(loc("src/parse.c", 10, 60, "dup_field")), multi_gt)
    assert s.metrics()["line@1"] == 0.0 and s.metrics()["line@5"] == 0.0
    assert s.metrics()["file@1"] == 1.0 and s.metrics()["func@1"] == 1.0
    assert 0 < s.iou < 0.05  # 2/51 with the 38-39 region at best
    assert s.locations[0].best_region == 4
    assert "longer than 50" in " ".join(s.locations[0].notes)
    # the parse.c regions (R3-R5) are overlapped, none is found
    assert [(r.overlapped_by, r.line_matched_by) for r in s.regions] == [
        ([], []),
        ([], []),
        ([1], []),
        ([1], []),
        ([1], []),
    ]
    assert [r.best_iou for r in s.regions] == [
        0.0,
        0.0,
        round(1 / 51, 6),
        round(2 / 51, 6),
        round(1 / 51, 6),
    ]
    assert "only overlapped by spans longer than 50 lines (rank(s) 1)" in "\n".join(s.explanation)
    # exactly 50 lines is allowed
    s = score(sub(loc("src/parse.c", 10, 59)), multi_gt)
    assert s.metrics()["line@1"] == 1.0


def test_none_submission_scores_zero(one_line_gt):
    s = score(None, one_line_gt)
    assert s.metrics() == EVERY_ZERO
    assert s.submitted is False and s.scorable is True
    assert s.explanation == ["no valid submission: every metric is 0"]


def test_failed_task_counts_as_zero_in_the_aggregate(one_line_gt):
    perfect = score(sub(loc("src/util.c", 5, function="util_copy")), one_line_gt)
    outcomes = [
        TaskOutcome(task_id="a", status="completed", scores=perfect.to_dict()),
        TaskOutcome(task_id="b", status="failed", failure_kind="agent", error="step limit"),
        TaskOutcome(task_id="c", status="failed", failure_kind="infra", error="image pull"),
        TaskOutcome(task_id="d", status="completed", scores=score(None, one_line_gt).to_dict()),
    ]
    agg = aggregate(outcomes)
    assert isinstance(agg, Aggregate)
    assert agg.n_tasks == 4 and agg.n_scored == 1 and agg.n_no_submission == 1
    assert agg.by_status == {"completed": 2, "failed": 2, "cancelled": 0}
    assert agg.by_failure == {"infra": 1, "agent": 1}
    assert agg.mean_all.n == 4 and agg.mean_all["iou"] == 0.25
    # the infra failure is not the agent's fault: left out of the second mean
    assert agg.mean_non_infra.n == 3
    assert agg.mean_non_infra["line@1"] == pytest.approx(1 / 3, abs=1e-6)
    data = agg.to_dict()
    assert data["mean_all"]["file@1"] == 0.25
    json.dumps(data)


def test_aggregate_cancelled_and_unscorable():
    empty_gt = ground_truth_from_patch("", None)
    outcomes = [
        TaskOutcome(status="cancelled"),
        TaskOutcome(status="completed", scores=score(sub(loc("a.c", 1)), empty_gt).to_dict()),
        TaskOutcome(status="failed", failure_kind="agent", scores=score(None, empty_gt).to_dict()),
    ]
    agg = aggregate(outcomes)
    assert agg.n_unscorable == 2
    assert agg.mean_all.n == 1 and agg.mean_all["iou"] == 0.0  # the cancelled task, as 0
    assert agg.mean_non_infra.n == 0
    assert aggregate([]).mean_all.n == 0


def test_failed_task_needs_a_failure_kind():
    with pytest.raises(ValidationError):
        TaskOutcome(status="failed")
    with pytest.raises(ValidationError):
        TaskOutcome(status="done")


def test_outcome_accepts_the_stores_string_enums():
    class Status(enum.StrEnum):
        failed = "failed"

    class Kind(enum.StrEnum):
        infra = "infra"

    o = TaskOutcome(status=Status.failed, failure_kind=Kind.infra)
    assert aggregate([o]).by_failure["infra"] == 1


def test_empty_ground_truth_is_not_scorable():
    gt = ground_truth_from_patch("", None)
    s = score(sub(loc("src/util.c", 5)), gt)
    assert s.scorable is False and s.metrics() == EVERY_ZERO
    assert "not scorable" in s.explanation[0]
    assert not any(e.startswith("FLBench") for e in s.explanation)  # said once, not twice


# --- metric details -------------------------------------------------------------------------


def test_ranks_at_1_and_at_5(multi_gt):
    s = score(
        sub(
            loc("README", 1),
            loc("src/parse.c", 70),
            loc("src/parse.c", 59, function="parse_header"),
        ),
        multi_gt,
    )
    assert own(s) == {
        "file@1": 0.0,
        "file@5": 1.0,
        "func@1": 0.0,
        "func@5": 1.0,
        "line@1": 0.0,
        "line@5": 1.0,
        "iou": 1.0,
    }


def test_insertion_region_iou(multi_gt):
    # tt_face_load_cmap: a check inserted between lines 38 and 39
    both = score(sub(loc("src/parse.c", 38, 39)), multi_gt)
    assert both.iou == 1.0 and both.metrics()["func@1"] == 1.0  # function inferred from the span
    one = score(sub(loc("src/parse.c", 39)), multi_gt)
    assert one.iou == 0.5 and one.metrics()["line@1"] == 1.0
    wider = score(sub(loc("src/parse.c", 36, 45)), multi_gt)
    assert wider.iou == pytest.approx(0.2)


def test_iou_is_best_over_regions_and_ranks(multi_gt):
    s = score(sub(loc("src/parse.c", 18, 21), loc("src/parse.c", 59, 60)), multi_gt)
    assert s.iou == 0.5  # rank 2: {59,60} ∩ {59} / {59,60}
    assert [x.iou for x in s.locations] == [0.25, 0.5]
    assert s.locations[1].best_region == 5  # R1 parse.h, R2 render.cc, R3-R5 parse.c


def test_function_needs_the_right_file(multi_gt):
    s = score(sub(loc("src/util.c", 5, function="dup_field")), multi_gt)
    assert s.metrics()["func@1"] == 0.0


def test_wrong_function_name_in_right_file(multi_gt):
    s = score(sub(loc("src/parse.c", 20, function="read_u16")), multi_gt)
    assert s.metrics()["func@1"] == 0.0 and s.metrics()["line@1"] == 1.0
    assert "not a changed function" in " ".join(s.locations[0].notes)


@pytest.mark.parametrize(
    ("written", "matches"),
    [
        ("demo::Grid::at", True),
        ("Grid::at", True),
        ("at", True),
        ("at()", True),
        ("T demo::Grid<T>::at(int x, int y) const", True),
        ("Other::at", False),
        ("demo::Other::at", False),
        ("Grid::resize", False),
        ("AT", False),
    ],
)
def test_cpp_method_names(multi_gt, written, matches):
    s = score(sub(loc("lib/render.cc", 12, function=written)), multi_gt)
    assert s.metrics()["func@1"] == float(matches), s.explanation


@pytest.mark.parametrize(
    ("written", "gt_name", "gt_qualified", "matches"),
    [
        ("dup_field", "dup_field", "dup_field", True),
        ("static char *dup_field(const char *src, size_t n)", "dup_field", "dup_field", True),
        ("dup_field()", "dup_field", "dup_field", True),
        ("Foo::dup_field", "dup_field", "dup_field", True),  # a C ground truth has no scope
        ("dup", "dup_field", "dup_field", False),
        ("PHP_FUNCTION(strlen)", "strlen", "PHP_FUNCTION(strlen)", True),
        ("strlen", "strlen", "PHP_FUNCTION(strlen)", True),
        ("read_u16, dup_field", "dup_field", "dup_field", True),
        ("`dup_field`", "dup_field", "dup_field", True),
    ],
)
def test_name_matching_rules(written, gt_name, gt_qualified, matches):
    gt = GTFunction(name=gt_name, qualified=gt_qualified, source="tree-sitter")
    assert any(names_match(p, gt) for p in function_names(written)) is matches


def test_function_inferred_only_when_span_inside(multi_gt):
    inside = score(sub(loc("src/parse.c", 19, 23)), multi_gt)
    assert inside.metrics()["func@1"] == 1.0
    assert "lie inside dup_field" in " ".join(inside.locations[0].notes)
    across = score(sub(loc("src/parse.c", 14, 20)), multi_gt)
    assert across.metrics()["func@1"] == 0.0


def test_explanation_names_regions_and_ranks(multi_gt):
    s = score(
        sub(
            loc("src/parse.c", 20, function="dup_field"),
            loc("lib/util.c", 5),
            loc("/src/proj/lib/util.c", 5),
        ),
        multi_gt,
        "proj",
    )
    text = "\n".join(s.explanation)
    assert "rank 1 src/parse.c:20: file ✓" in text
    assert "rank 2 lib/util.c:5: file ✗ — not a changed file" in text
    assert "region R3 src/parse.c:20 in dup_field (changed): found by rank(s) 1" in text
    assert "region R1 include/parse.h:8-9 (insertion): not found by any of the top 5" in text
    assert "rank 3 /src/proj/lib/util.c:5 (normalized: lib/util.c): file ✗" in text
    assert [r.line_matched_by for r in s.regions] == [[], [], [1], [], []]


def test_task_score_json_round_trip(multi_gt):
    s = score(sub(loc("src/parse.c", 20, function="dup_field")), multi_gt)
    data = s.to_dict()
    assert {"file@1", "file@5", "func@1", "func@5", "line@1", "line@5", "iou"} <= set(data)
    assert "file_at_1" not in data
    back = TaskScore.model_validate(json.loads(json.dumps(data)))
    assert back == s
    assert s.model_dump(by_alias=True)["line@1"] == 1.0


def test_path_candidates_and_normalization():
    assert path_candidates("/src/libass/libass/ass_render.c", "libass") == ["libass/ass_render.c"]
    # a relative path starting with the project name may be a real folder of the repo
    assert path_candidates("libass/ass_render.c", "libass") == [
        "libass/ass_render.c",
        "ass_render.c",
    ]
    assert normalize_path("/src/libass/libass/ass_render.c") == "libass/ass_render.c"
    assert normalize_path("libass/ass_render.c", "libass") == "libass/ass_render.c"
    assert normalize_path("src-vul/libass/x.c") == "x.c"
    assert normalize_path("./a/../b/./c.c") == "b/c.c"


def test_repo_folder_named_like_the_project():
    """libass keeps its sources in libass/: the ground-truth path is libass/ass_render.c."""
    patch = "--- a/libass/ass_render.c\n+++ b/libass/ass_render.c\n@@ -3 +3 @@\n-a\n+b\n"
    gt = ground_truth_from_patch(patch, None)
    for written in (
        "/src/libass/libass/ass_render.c",
        "libass/ass_render.c",
        "libass/libass/ass_render.c",
        "src-vul/libass/libass/ass_render.c",
    ):
        assert score(sub(loc(written, 3)), gt, "libass").metrics()["line@1"] == 1.0, written
    assert score(sub(loc("ass_render.c", 3)), gt, "libass").metrics()["file@1"] == 0.0
