"""``arena compare RUN_A RUN_B [...]``: paired comparison of runs on the tasks both scored.

Each further run is compared with the first (difference = first - other). Per metric: the mean
difference with a paired cluster-bootstrap 95% interval (tasks of one project resampled
together), McNemar's exact test for the hit/miss metrics, and win/loss/tie counts. Tasks that
either side lost to infra (or never ran) are listed apart and never counted as a loss. The cost
per hit of every run and a cost-accuracy plot come with it. The paired logic is kind-neutral
(:mod:`services.shared.paired`, also used by green's dashboard); estimators:
:mod:`services.shared.stats`; rules: ``docs/scoring.md`` ("Comparing runs").
"""

from __future__ import annotations

from typing import Any

from services.arena.results import RunOutcome, RunResults
from services.shared import paired, stats

TaskView = paired.TaskView
RunView = paired.RunView
compare_pair = paired.compare_pair


def _attempt(o: RunOutcome) -> paired.Attempt:
    return paired.Attempt(o.ref or "", o.status, o.failure_kind, o.end_reason, o.scores)


def run_view(results: RunResults) -> RunView:
    """Average each task's answerable trials (completed, or failed by the agent: 0)."""
    return paired.run_view(
        results.run,
        results.task_ids,
        map(_attempt, results.tasks),
        results.metrics(),
        results.continuous(),
    )


def cost_per_hit(results: RunResults) -> dict[str, Any]:
    """Total cost and tokens of the run over its hits per metric (None when no hit); a
    continuous metric (iou) is summed as partial hits."""
    cost = sum(o.cost for o in results.tasks)
    tokens = sum(o.tokens_in + o.tokens_out for o in results.tasks)
    out: dict[str, Any] = {"cost": round(cost, 6), "tokens": tokens}
    metrics = results.metrics()
    rows = [_attempt(o).row(metrics) for o in results.tasks]
    for m in metrics:
        hits = sum(r[m] for r in rows)
        out[m] = {
            "hits": round(hits, 6),
            "cost_per_hit": round(cost / hits, 6) if hits else None,
            "tokens_per_hit": round(tokens / hits, 1) if hits else None,
        }
    return out


def compare_runs(runs: list[RunResults]) -> dict[str, Any]:
    """The first run against each of the others, with every run's means and cost per hit."""
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    names = [r.run for r in runs]
    if len(set(names)) != len(names):
        raise ValueError(f"two runs have the same name: {names}")
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics()))
    views = [run_view(r) for r in runs]
    for v in views:  # every pair reports every metric of the comparison
        v.metrics = metrics
    return {
        **stats.method_info(),
        "metrics": metrics,
        "runs": [
            {
                "run": r.run,
                "purple": r.purple,
                "mean_all": r.aggregate.get("mean_all"),
                "uncertainty": (r.aggregate.get("uncertainty") or {}).get("mean_all"),
                "cost": cost_per_hit(r),
                "n_tasks": len(r.task_ids),
                "metrics": r.metrics(),
            }
            for r in runs
        ],
        "pairs": [compare_pair(views[0], v) for v in views[1:]],
    }
