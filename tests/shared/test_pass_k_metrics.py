"""pass@k tables list the hit/miss metrics only: a continuous ``iou`` (partial overlaps) has no
hit to count, and its pass@k of 0 beside a mean of 0.18 read as a failure (report.md, the
dashboard's run page)."""

from __future__ import annotations

from services.arena.report import _trial_rows
from services.green.ui.templating import templates
from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate
from services.shared.stats import pass_k_metrics

METRICS = ["file@1", "iou"]


def _attempt(ref: str, trial: int, hit: float, iou: float) -> TaskOutcome:
    scores = {"file@1": hit, "iou": iou, "submitted": True, "project": f"p{ref}"}
    return TaskOutcome(ref_id=ref, trial=trial, status="completed", scores=scores)


def _agg(ious: list[float]) -> dict:
    outs = [_attempt(str(i // 2), i % 2 + 1, float(i % 3 == 0), v) for i, v in enumerate(ious)]
    return aggregate(outs, METRICS).to_dict()


def _trials_table(agg: dict) -> str:
    page = templates.env.get_template("macros.html").module.means(agg)
    return str(page).split('id="trials"', 1)[1].split("</table>", 1)[0]


def test_a_continuous_iou_has_no_pass_at_k_row():
    agg = _agg([0.18, 0.0, 0.4, 0.25, 0.1, 0.0])
    assert "iou" not in agg["trials"] and "file@1" in agg["trials"]
    assert pass_k_metrics(agg, METRICS) == ["file@1"]
    table = _trials_table(agg)
    assert '<th scope="row">file@1</th>' in table and '<th scope="row">iou</th>' not in table
    rows = "\n".join(_trial_rows(agg, METRICS))
    assert "| file@1 |" in rows and "| iou |" not in rows


def test_iou_of_perfect_or_empty_overlaps_keeps_its_row():
    agg = _agg([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])  # every overlap perfect or empty: hit/miss
    assert pass_k_metrics(agg, METRICS) == METRICS
    assert '<th scope="row">iou</th>' in _trials_table(agg)
    assert "| iou |" in "\n".join(_trial_rows(agg, METRICS))


def test_an_aggregate_stored_with_a_continuous_iou_row_does_not_show_it():
    agg = _agg([0.18, 0.0, 0.4, 0.25, 0.1, 0.0])
    agg["trials"]["iou"] = dict(agg["trials"]["file@1"])  # as aggregates were stored before
    assert pass_k_metrics(agg, METRICS) == ["file@1"]
    assert '<th scope="row">iou</th>' not in _trials_table(agg)
