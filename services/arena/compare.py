"""``arena compare RUN_A RUN_B [...]``: paired comparison of runs on the tasks both scored.

Each further run is compared with the first (difference = first - other). Per metric: the mean
difference with a paired cluster-bootstrap 95% interval (tasks of one project resampled
together), McNemar's exact test for the hit/miss metrics, and win/loss/tie counts. Tasks that
either side lost to infra (or never ran) are listed apart and never counted as a loss. The cost
per hit of every run and a cost-accuracy plot come with it. Estimators:
:mod:`services.shared.stats`; rules: ``docs/scoring.md`` ("Comparing runs").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from services.arena.results import Outcome, RunResults
from services.shared import stats
from services.shared.scores import METRICS

BINARY = tuple(m for m in METRICS if m != "iou")
"""Hit/miss metrics (McNemar applies); iou is continuous."""


@dataclass
class TaskView:
    """What one run says of one task: the per-metric mean over its answerable trials."""

    means: dict[str, float]
    project: str | None
    trials: int


@dataclass
class RunView:
    name: str
    tasks: dict[str, TaskView] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)
    """Task -> why it has no answerable attempt (infra failure, cancelled, not run)."""
    unscorable: set[str] = field(default_factory=set)


def _answerable(o: Outcome) -> bool:
    return o.status == "completed" or (o.status == "failed" and o.failure_kind == "agent")


def run_view(results: RunResults) -> RunView:
    """Average each task's answerable trials (completed, or failed by the agent: 0)."""
    view = RunView(results.run)
    by_task: dict[str, list[Outcome]] = {}
    for o in results.tasks:
        by_task.setdefault(o.arvo_id, []).append(o)
    for arvo_id in results.task_ids:
        outs = by_task.get(arvo_id, [])
        if any((o.scores or {}).get("scorable") is False for o in outs):
            view.unscorable.add(arvo_id)
            continue
        ok = [o for o in outs if _answerable(o)]
        if not ok:
            why = ", ".join(
                sorted({f"{o.status} ({o.failure_kind or o.end_reason})" for o in outs})
            )
            view.lost[arvo_id] = why or "not run"
            continue
        rows = [_row(o) for o in ok]
        means = {m: sum(r[m] for r in rows) / len(rows) for m in METRICS}
        project = next((str(p) for o in ok if (p := (o.scores or {}).get("project"))), None)
        view.tasks[arvo_id] = TaskView(means, project, len(ok))
    return view


def _row(o: Outcome) -> dict[str, float]:
    scored = o.status == "completed" and bool((o.scores or {}).get("submitted", True))
    return {m: o.metric(m) if scored else 0.0 for m in METRICS}


def compare_pair(a: RunView, b: RunView) -> dict[str, Any]:
    """``a`` against ``b`` on the tasks both scored."""
    common = [t for t in a.tasks if t in b.tasks]
    lost = {
        t: {
            "a": a.lost.get(t, "scored" if t in a.tasks else "not in the run"),
            "b": b.lost.get(t, "scored" if t in b.tasks else "not in the run"),
        }
        for t in sorted(set(a.lost) | set(b.lost))
    }
    clusters = [a.tasks[t].project or b.tasks[t].project or f"task:{t}" for t in common]
    metrics: dict[str, Any] = {}
    for m in METRICS:
        va = [a.tasks[t].means[m] for t in common]
        vb = [b.tasks[t].means[m] for t in common]
        diff = stats.paired_difference(va, vb, clusters).to_dict()
        entry: dict[str, Any] = {
            "a": stats.cluster_bootstrap(va, clusters).to_dict()["mean"],
            "b": stats.cluster_bootstrap(vb, clusters).to_dict()["mean"],
            "difference": diff,
            **stats.win_loss_tie(va, vb),
        }
        if m in BINARY:
            # a task is a hit when more than half of its trials hit (with one trial: the trial)
            entry["mcnemar"] = stats.mcnemar_exact(
                [x > 0.5 for x in va], [x > 0.5 for x in vb]
            ).to_dict()
        metrics[m] = entry
    return {
        "a": a.name,
        "b": b.name,
        "n_common": len(common),
        "n_clusters": len(set(clusters)),
        "tasks": common,
        "lost": lost,
        "unscorable": sorted(a.unscorable | b.unscorable),
        "metrics": metrics,
    }


def cost_per_hit(results: RunResults) -> dict[str, Any]:
    """Total cost and tokens of the run over its hits per metric (None when no hit); iou is
    summed as partial hits."""
    cost = sum(o.cost for o in results.tasks)
    tokens = sum(o.tokens_in + o.tokens_out for o in results.tasks)
    out: dict[str, Any] = {"cost": round(cost, 6), "tokens": tokens}
    for m in METRICS:
        hits = sum(_row(o)[m] for o in results.tasks)
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
    views = [run_view(r) for r in runs]
    return {
        **stats.method_info(),
        "runs": [
            {
                "run": r.run,
                "purple": r.purple,
                "mean_all": r.aggregate.get("mean_all"),
                "uncertainty": (r.aggregate.get("uncertainty") or {}).get("mean_all"),
                "cost": cost_per_hit(r),
                "n_tasks": len(r.task_ids),
            }
            for r in runs
        ],
        "pairs": [compare_pair(views[0], v) for v in views[1:]],
    }
