"""Paired comparison of two runs on the tasks both scored, for any task kind.

A run is a list of :class:`Attempt` (one per task and trial). Per task the answerable trials
(completed, or failed by the agent: 0) are averaged; every task not scored by both runs is
listed apart with each side's reason (not in the run, not run, lost to infra, cancelled,
refused by green, unscorable) and never counted as a loss. Per metric: the mean difference
(first - second), its 95% interval and p-value from one sign-flip test
(:mod:`services.shared.signflip`: tasks of one project flipped together; the interval excludes
0 exactly when p < 0.05), win/loss/tie. Used by ``arena compare`` and green's dashboard; whether
two runs may be compared at all is :mod:`services.shared.comparable`; rules in
``docs/scoring.md``.

The metrics are those found in the runs' score records (:func:`services.shared.scores.metric_names`)
or declared by their kind; a metric is hit/miss when every recorded value of it is 0 or 1
(:func:`services.shared.scores.hit_or_miss`: ARVO's ``@k`` metrics, SWE-bench's ``resolved``),
continuous otherwise (ARVO's ``iou``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from services.shared import signflip, stats
from services.shared.scores import hit_or_miss, metric_names
from services.shared.signflip import sign_flips

NOT_IN_RUN = "not in the run"
UNSCORABLE = "unscorable (empty ground truth)"


@dataclass
class Attempt:
    """One trial of one task as a run recorded it."""

    task: str
    status: str
    failure_kind: str | None = None
    end_reason: str | None = None
    scores: dict[str, Any] | None = None
    error: str | None = None
    provenance: dict[str, Any] | None = None
    """What decides the score, in the flat form of :func:`services.shared.comparable.decisive_of`."""

    def metric(self, name: str) -> float:
        return float((self.scores or {}).get(name, 0.0))

    @property
    def answerable(self) -> bool:
        return self.status == "completed" or (
            self.status == "failed" and self.failure_kind == "agent"
        )

    @property
    def why_not_scored(self) -> str:
        """Why this attempt counts for nothing: ``failed (infra: sandbox)``, ``cancelled``, or
        green's refusal of the task (an id it does not know) in its own words."""
        if self.end_reason == "rejected" and self.error:
            return self.error
        detail = ": ".join(x for x in (self.failure_kind, self.end_reason) if x)
        return f"{self.status} ({detail})" if detail else self.status

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
    """Task -> why it has no answerable attempt (infra failure, cancelled, refused, not run)."""
    unscorable: set[str] = field(default_factory=set)

    def why(self, task: str) -> str:
        """This run's word on a task: ``scored``, or why it was not."""
        if task in self.tasks:
            return "scored"
        if task in self.unscorable:
            return UNSCORABLE
        return self.lost.get(task, NOT_IN_RUN)


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
            view.lost[task] = "; ".join(sorted({a.why_not_scored for a in outs})) or "not run"
            continue
        rows = [a.row(names) for a in ok]
        means = {m: sum(r[m] for r in rows) / len(rows) for m in names}
        project = next((str(p) for a in ok if (p := (a.scores or {}).get("project"))), None)
        view.tasks[task] = TaskView(means, project, len(ok))
    return view


def compare_pair(a: RunView, b: RunView) -> dict[str, Any]:
    """``a`` against ``b`` on the tasks both scored, per metric of either run (``binary``:
    those hit/miss in both); ``not_compared``: every other task either run names, with each
    side's reason."""
    common = [t for t in a.tasks if t in b.tasks]
    named = dict.fromkeys(
        [*a.tasks, *a.lost, *sorted(a.unscorable), *b.tasks, *b.lost, *sorted(b.unscorable)]
    )
    not_compared = {
        t: {"a": a.why(t), "b": b.why(t)} for t in named if t not in a.tasks or t not in b.tasks
    }
    clusters = [a.tasks[t].project or b.tasks[t].project or f"task:{t}" for t in common]
    names = list(dict.fromkeys([*a.metrics, *b.metrics]))
    binary = [m for m in names if m in a.binary | b.binary and m not in _continuous(a, b)]
    values = {
        m: (
            [a.tasks[t].means.get(m, 0.0) for t in common],
            [b.tasks[t].means.get(m, 0.0) for t in common],
        )
        for m in names
    }
    bounds = {
        m: (-1.0, 1.0) if all(0.0 <= v <= 1.0 for v in [*va, *vb]) else (-math.inf, math.inf)
        for m, (va, vb) in values.items()
    }
    tests = sign_flips(values, clusters, bounds=bounds)
    metrics = {
        m: {
            "a": _mean(va),
            "b": _mean(vb),
            "difference": tests[m].to_dict(),
            **stats.win_loss_tie(va, vb),
        }
        for m, (va, vb) in values.items()
    }
    one_trial = all(a.tasks[t].trials == 1 == b.tasks[t].trials for t in common)
    independent = len(set(clusters)) == len(common)
    mcnemar = [m for m in binary if one_trial and independent and tests[m].method == signflip.EXACT]
    return {
        "a": a.name,
        "b": b.name,
        "n_common": len(common),
        "n_clusters": len(set(clusters)),
        "tasks": common,
        "not_compared": not_compared,
        "unscorable": sorted(a.unscorable | b.unscorable),
        "binary": binary,
        "mcnemar": mcnemar,
        "metrics": metrics,
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def _continuous(a: RunView, b: RunView) -> set[str]:
    """Metrics continuous in either run (found there, not hit/miss)."""
    return {m for v in (a, b) for m in v.metrics if m not in v.binary}
