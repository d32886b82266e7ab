"""Batch-run results (``results/<run>/results.json``) and their report (``report.md`` + PNG).

Used by the batch CLI (:mod:`services.green.cli`); see ``docs/cli.md``.
"""

from services.green.report.render import render_report
from services.green.report.results import (
    RESULTS_FILE,
    Outcome,
    RunResults,
    Session,
    aggregate_outcomes,
    compact_scores,
    outcome_from_task,
    task_dir_name,
)

__all__ = [
    "RESULTS_FILE",
    "Outcome",
    "RunResults",
    "Session",
    "aggregate_outcomes",
    "compact_scores",
    "outcome_from_task",
    "render_report",
    "task_dir_name",
]
