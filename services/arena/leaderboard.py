"""``results/<run>/leaderboard.json``: the run as the AgentBeats leaderboard runner writes an
assessment, so ``docs/leaderboard/queries.json`` runs over it with DuckDB as it is.

``{"participants": {"agent": "<run name>"}, "results": [<flat row>]}``: the flat row is green's
(:func:`services.shared.scores.flat_scores` of the same aggregate) with the run's ``assessment_id``
(green's id of the run, as the ``Result`` artifact has it), and each attempt's reference,
status and compact scores under ``tasks``. The run's name stands where AgentBeats puts the agent's
id, so several runs read side by side are told apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.arena.results import RunResults
from services.shared.files import write_json_atomic
from services.shared.scores import flat_scores

LEADERBOARD_FILE = "leaderboard.json"


def leaderboard_row(results: RunResults) -> dict[str, Any]:
    tasks = [  # every task carries a bug class (None where none is known), as green's do
        {
            "ref": o.ref,
            "trial": o.trial,
            "status": o.status.value,
            "scores": {**(o.scores or {}), "bug_class": (o.scores or {}).get("bug_class")},
        }
        for o in results.tasks
    ]
    return {
        "run": results.run,
        "assessment_id": results.green_run or results.run,  # as green's Result artifact names it
        **flat_scores(results.aggregate),
        "tasks": tasks,
    }


def write_leaderboard(results: RunResults, run_dir: Path) -> Path:
    path = run_dir / LEADERBOARD_FILE
    doc = {"participants": {"agent": results.run}, "results": [leaderboard_row(results)]}
    write_json_atomic(path, doc)
    return path
