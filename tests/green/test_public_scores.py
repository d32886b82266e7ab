"""What of a task's scores a caller who may not see the ground truth is shown: the fields its kind
declares harmless, and nothing of a kind that declares nothing."""

from __future__ import annotations

from services.green.edge.disclosure import public_scores
from services.green.kinds.arvo.scoring.metrics import METRICS

ARVO_SCORES = {
    **dict.fromkeys(METRICS, 1.0),
    "scorable": True,
    "submitted": True,
    "n_locations": 2,
    "bug_class": "heap-overflow",
    "project": "xmlmini",
    "floors": {"empty": {}, "crash_frame": {"file@1": 1.0}},
    "matched_files": ["src/a.c"],
    "explanation": ["src/a.c:12 is in the patched function f"],
}


def test_arvo_shows_its_metrics_and_counts_but_nothing_that_names_the_answer() -> None:
    shown = public_scores("arvo", ARVO_SCORES)
    assert shown is not None
    # project and bug class: the crash report the agent reads names both; the floors say
    # whether the crash frame is the fix
    assert set(shown) == {*METRICS, "scorable", "submitted", "n_locations", "bug_class", "project"}


def test_swebench_shows_resolved_but_not_the_test_report() -> None:
    scores = {
        "resolved": 1.0,
        "submitted": True,
        "patch_applied": True,
        "fail_to_pass": {"tests/test_x.py::test_y": "PASSED"},
        "log_tail": "...",
        "explanation": ["FAIL_TO_PASS all pass"],
    }
    assert public_scores("swebench", scores) == {"resolved": 1.0, "submitted": True}


def test_a_kind_that_declares_nothing_or_is_unknown_shows_nothing() -> None:
    # the score fields of an unregistered kind (a row left by a kind this green no longer
    # serves) or one without declarations may name its answer: none is shown
    assert public_scores("needle", {"found": 1.0, "line": 512}) == {}
    assert public_scores("arvo", None) is None
