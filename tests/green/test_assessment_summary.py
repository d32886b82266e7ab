"""The A2A ``Result`` artifact's text (:meth:`AssessmentResult.summary`)."""

from __future__ import annotations

from services.green.assessments.runner import AssessmentResult
from services.shared.outcome import TaskOutcome, TaskStatus
from services.shared.scores import aggregate

SCORES = {"file@1": 1.0, "iou": 0.25, "submitted": True, "project": "p1"}


def _result(n: int) -> AssessmentResult:
    tasks = [
        TaskOutcome(kind="arvo", ref_id=str(900001 + i), status=TaskStatus.completed, scores=SCORES)
        for i in range(n)
    ]
    agg = aggregate(tasks).to_dict()
    return AssessmentResult(assessment_id="a1", purple_url="http://p", tasks=tasks, aggregate=agg)


def test_one_task_has_no_interval_line_rather_than_an_empty_one():
    text = _result(1).summary()
    assert "mean over 1:" in text
    assert "intervals" not in text, text
    assert not text.endswith(": "), text
