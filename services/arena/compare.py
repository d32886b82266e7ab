"""``arena compare RUN_A RUN_B [...]``: paired comparison of runs on the tasks both scored.

Each further run is compared with the first (difference = first - other). Per metric: the mean
difference with the 95% interval and p-value of one sign-flip test (tasks of one project flipped
together: the interval excludes 0 exactly when p < 0.05), and win/loss/tie counts. Every task
not scored by both runs (not in a run, not run, lost to infra, refused, unscorable) is listed
apart with each side's reason and never counted as a loss. The cost per hit of every run and a
cost-accuracy plot come with it. The paired logic is kind-neutral (:mod:`services.shared.paired`,
also used by green's dashboard); the test: :mod:`services.shared.signflip`; rules:
``docs/scoring.md`` ("Comparing runs").
"""

from __future__ import annotations

from typing import Any

from services.arena.results import RunResults
from services.shared import paired, signflip, stats

TaskView = paired.TaskView
RunView = paired.RunView
compare_pair = paired.compare_pair


def run_view(results: RunResults) -> RunView:
    """Average each task's answerable trials (completed, or failed by the agent: 0)."""
    return paired.run_view(
        results.run,
        results.task_ids,
        (o.as_attempt() for o in results.tasks),
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
    rows = [o.as_attempt().row(metrics) for o in results.tasks]
    for m in metrics:
        hits = sum(r[m] for r in rows)
        out[m] = {
            "hits": round(hits, 6),
            "cost_per_hit": round(cost / hits, 6) if hits else None,
            "tokens_per_hit": round(tokens / hits, 1) if hits else None,
        }
    return out


def compare_runs(runs: list[RunResults]) -> dict[str, Any]:
    """The first run against each of the others, with every run's means and cost per hit: of
    the runs' one kind, or, for runs of several kinds, ``by_kind``: the same per kind, over the
    tasks of that kind only (each metric over its own kind's tasks)."""
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    names = [r.run for r in runs]
    if len(set(names)) != len(names):
        raise ValueError(f"two runs have the same name: {names}")
    head = {"level": stats.LEVEL, "test": signflip.TEST}
    kinds = list(dict.fromkeys(k for r in runs for k in r.run_kinds()))
    if len(kinds) <= 1:
        return {**head, **_compare_kind(runs)}
    return {**head, "by_kind": {k: _compare_kind([r.of_kind(k) for r in runs]) for k in kinds}}


def _compare_kind(runs: list[RunResults]) -> dict[str, Any]:
    """:func:`compare_runs` of runs restricted to one kind."""
    metrics = list(dict.fromkeys(m for r in runs for m in r.metrics()))
    views = [run_view(r) for r in runs]
    for v in views:  # every pair reports every metric of the comparison
        v.metrics = metrics
    return {
        "metrics": metrics,
        "runs": [
            {
                "run": r.run,
                "purple": r.purple,
                "mean_all": r.aggregate.get("mean_all"),
                "uncertainty": (r.aggregate.get("uncertainty") or {}).get("mean_all"),
                "cost": cost_per_hit(r),
                "n_tasks": len(r.task_ids),
                "n_unscorable": len(v.unscorable),
                "metrics": r.metrics(),
            }
            for r, v in zip(runs, views, strict=True)
        ],
        "pairs": [compare_pair(views[0], v) for v in views[1:]],
    }
