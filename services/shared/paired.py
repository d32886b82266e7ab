"""Paired comparison of two runs on the tasks both scored, for any task kind.

A run is a list of :class:`Attempt` (one per task and trial). Per task the answerable trials
(completed, or failed by the agent: 0) are averaged; tasks with no answerable trial (lost to
infra, cancelled, not run) are listed apart and never counted as a loss. Per metric: the mean
difference (first - second) with a paired cluster-bootstrap 95% interval (tasks of one project
resampled together), McNemar's exact test for the hit/miss metrics, and win/loss/tie. Also the
check that two runs may be compared: the scoring rule version and image digest of each task must
agree. Used by ``arena compare`` and green's dashboard; rules in ``docs/scoring.md``.

The metrics are those found in the runs' score records (:func:`services.shared.scores.metric_names`);
a metric is hit/miss (McNemar applies) when every recorded value of it is 0 or 1
(:func:`services.shared.scores.hit_or_miss`: ARVO's ``@k`` metrics, SWE-bench's ``resolved``),
continuous otherwise (ARVO's ``iou``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from services.shared import stats
from services.shared.scores import hit_or_miss, metric_names

DECISIVE = ("scoring_version", "image_id")
"""Provenance keys that must agree for a task before two runs are compared."""


@dataclass
class Attempt:
    """One trial of one task as a run recorded it."""

    task: str
    status: str
    failure_kind: str | None = None
    end_reason: str | None = None
    scores: dict[str, Any] | None = None

    def metric(self, name: str) -> float:
        return float((self.scores or {}).get(name, 0.0))

    @property
    def answerable(self) -> bool:
        return self.status == "completed" or (
            self.status == "failed" and self.failure_kind == "agent"
        )

    def row(self, metrics: Iterable[str]) -> dict[str, float]:
        """The metrics it counts for: 0 unless completed with a submission."""
        scored = self.status == "completed" and bool((self.scores or {}).get("submitted", True))
        return {m: self.metric(m) if scored else 0.0 for m in metrics}


@dataclass
class TaskView:
    """What one run says of one task: the per-metric mean over its answerable trials."""

    means: dict[str, float]
    project: str | None
    trials: int


@dataclass
class RunView:
    name: str
    metrics: list[str] = field(default_factory=list)
    """The metrics found in the run's scores, in order."""
    binary: set[str] = field(default_factory=set)
    """Those of them whose every recorded value is 0 or 1 (hit/miss)."""
    tasks: dict[str, TaskView] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)
    """Task -> why it has no answerable attempt (infra failure, cancelled, not run)."""
    unscorable: set[str] = field(default_factory=set)


def run_view(
    name: str,
    task_ids: Iterable[str],
    attempts: Iterable[Attempt],
    metrics: Iterable[str] | None = None,
    continuous: Iterable[str] | None = None,
) -> RunView:
    """Average each task's answerable trials (``task_ids``: every task the run meant to do).
    ``metrics`` / ``continuous``: what the tasks' kind declares (default: found in the scores,
    hit/miss when every value is 0 or 1)."""
    attempts = list(attempts)
    scores = [a.scores for a in attempts]
    names = list(metrics) if metrics is not None else metric_names(scores)
    if continuous is not None:
        binary = set(names) - set(continuous)
    else:
        binary = {m for m in names if hit_or_miss(scores, m)}
    view = RunView(name, names, binary)
    by_task: dict[str, list[Attempt]] = {}
    for a in attempts:
        by_task.setdefault(a.task, []).append(a)
    for task in task_ids:
        outs = by_task.get(task, [])
        if any((a.scores or {}).get("scorable") is False for a in outs):
            view.unscorable.add(task)
            continue
        ok = [a for a in outs if a.answerable]
        if not ok:
            why = ", ".join(
                sorted({f"{a.status} ({a.failure_kind or a.end_reason})" for a in outs})
            )
            view.lost[task] = why or "not run"
            continue
        rows = [a.row(names) for a in ok]
        means = {m: sum(r[m] for r in rows) / len(rows) for m in names}
        project = next((str(p) for a in ok if (p := (a.scores or {}).get("project"))), None)
        view.tasks[task] = TaskView(means, project, len(ok))
    return view


def compare_pair(a: RunView, b: RunView) -> dict[str, Any]:
    """``a`` against ``b`` on the tasks both scored, per metric of either run (``binary``:
    those hit/miss in both, where McNemar's test applies)."""
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
    names = list(dict.fromkeys([*a.metrics, *b.metrics]))
    binary = [m for m in names if m in a.binary | b.binary and m not in _continuous(a, b)]
    for m in names:
        va = [a.tasks[t].means.get(m, 0.0) for t in common]
        vb = [b.tasks[t].means.get(m, 0.0) for t in common]
        diff = stats.paired_difference(va, vb, clusters).to_dict()
        entry: dict[str, Any] = {
            "a": stats.cluster_bootstrap(va, clusters).to_dict()["mean"],
            "b": stats.cluster_bootstrap(vb, clusters).to_dict()["mean"],
            "difference": diff,
            **stats.win_loss_tie(va, vb),
        }
        if m in binary:
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
        "binary": binary,
        "metrics": metrics,
    }


def _continuous(a: RunView, b: RunView) -> set[str]:
    """Metrics continuous in either run (found there, not hit/miss)."""
    return {m for v in (a, b) for m in v.metrics if m not in v.binary}


def decisive_of(provenance: dict[str, Any] | None) -> dict[str, Any]:
    """The keys of green's task provenance that must agree (``DECISIVE``)."""
    p = provenance or {}
    return {
        "scoring_version": (p.get("scoring") or {}).get("version"),
        "image_id": (p.get("image") or {}).get("id"),
    }


def decisive_conflicts(
    runs: Iterable[tuple[str, Iterable[tuple[str, dict[str, Any] | None]]]],
) -> list[str]:
    """One sentence per task whose scoring rule version or image digest differs between the
    runs (or between the trials of one run). ``runs``: (run name, (task, decisive provenance
    with ``scoring_version`` and ``image_id``) per attempt)."""
    seen: dict[str, dict[str, dict[str, set[str]]]] = {}
    for run, attempts in runs:
        for task, prov in attempts:
            for key in DECISIVE:
                if (prov or {}).get(key):
                    per_run = seen.setdefault(task, {}).setdefault(key, {})
                    per_run.setdefault(run, set()).add(str(prov[key]))  # type: ignore[index]
    problems = []
    for task, keys in sorted(seen.items()):
        for key, per_run in keys.items():
            if len(set().union(*per_run.values())) > 1:
                what = "image digest" if key == "image_id" else "scoring rule version"
                detail = "; ".join(
                    f"{run}: {', '.join(sorted(v))}" for run, v in sorted(per_run.items())
                )
                problems.append(f"task {task} was scored with a different {what} ({detail})")
    return problems
