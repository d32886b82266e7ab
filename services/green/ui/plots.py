"""Per-run plots as SVG, drawn on the server with matplotlib (no JavaScript charting).

matplotlib is imported at the first plot, not with green: it is a third of green's import time,
and a replica must be ready to serve within seconds of its start (docs/deployment.md).
"""

from __future__ import annotations

import io
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate_metrics, headline, metric_names, score_value

PLOTS = ("metrics", "bug_class", "fix_position", "cost")
"""The plot names of a run page."""


@dataclass(frozen=True)
class Point:
    """One ended attempt of a run, as the plots see it."""

    outcome: TaskOutcome
    """Its ending and the scores the viewer may see: the means are made from these."""
    cost: float = 0.0
    bug_class: str = "unknown"
    fix_position: str = "unknown"


Aggregate = Callable[[list[TaskOutcome]], dict[str, Any]]
"""The run's aggregate over some of its attempts (green's kinds': ``Aggregate.to_dict()``)."""


def _svg(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    return buf.getvalue()


def _figure(title: str, width: float = 6.4) -> tuple[Figure, object]:
    from matplotlib.figure import Figure  # at first use: see the module's docstring

    fig = Figure(figsize=(width, 3.4))
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=11)
    ax.set_ylim(0, 1.05)
    ax.grid(axis="y", alpha=0.3)
    return fig, ax


def _empty(fig: Figure, ax, text: str) -> bytes:
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="gray")
    ax.set_xticks([])
    return _svg(fig)


def _bars(ax, xs: list[float], agg: dict[str, Any], metric: str, **style: Any) -> Any:
    """One bar per aggregate at ``xs``: its ``mean_all`` of ``metric`` with the 95% interval as
    an error bar (no bar for a mean over no task, no error bar where there is no interval)."""
    interval = ((agg.get("uncertainty") or {}).get("mean_all") or {}).get(metric) or {}
    mean = interval.get("mean", (agg.get("mean_all") or {}).get(metric))
    if mean is None:
        return
    bars = ax.bar(xs, [mean], **style)
    low, high = interval.get("ci_low"), interval.get("ci_high")
    if low is not None and high is not None:
        ax.errorbar(xs, [mean], yerr=[[mean - low], [high - mean]], fmt="none", ecolor="black",
                    elinewidth=0.8, capsize=2)  # fmt: skip
    return bars


def _tasks(agg: dict[str, Any]) -> int:
    """The tasks behind an aggregate's means (``mean_all.n``)."""
    return int((agg.get("mean_all") or {}).get("n") or 0)


def metric_means(points: list[Point], aggregate: Aggregate) -> bytes:
    agg = aggregate([p.outcome for p in points]) if points else {}
    names = aggregate_metrics(agg) if agg else []
    title = f"Mean score per metric, 95% intervals (n={_tasks(agg)} tasks)"
    fig, ax = _figure(title, width=max(6.4, 0.6 * len(names) + 1))  # ARVO's nineteen fit
    if not _tasks(agg) or not names:
        return _empty(fig, ax, "no scored task yet")
    for i, metric in enumerate(names):
        bars = _bars(ax, [i], agg, metric, color="tab:blue")
        if bars is not None:
            ax.bar_label(bars, fmt="%.2f", fontsize=8, padding=6)
    tilt = len(names) > 8
    ax.set_xticks(
        range(len(names)), names, rotation=40 if tilt else 0, ha="right" if tilt else "center"
    )
    return _svg(fig)


def group_aggregates(points: list[Point], attr: str, aggregate: Aggregate) -> dict[str, Any]:
    """Per value of ``attr`` (``bug_class``, ``fix_position``), sorted, the aggregate of its
    attempts, as the whole run's is made; groups with no scorable task are left out."""
    groups: dict[str, list[TaskOutcome]] = defaultdict(list)
    for p in points:
        groups[getattr(p, attr)].append(p.outcome)
    aggs = {name: aggregate(outs) for name, outs in sorted(groups.items())}
    return {name: agg for name, agg in aggs.items() if _tasks(agg)}


def by_group(points: list[Point], attr: str, title: str, aggregate: Aggregate) -> bytes:
    """Per group of tasks, each aggregated as the whole run is (a task's trials averaged first,
    failures 0, unscorable tasks left out, n = tasks), the headline metrics with intervals."""
    aggs = group_aggregates(points, attr, aggregate)
    names = list(aggs)
    fig, ax = _figure(f"{title}, 95% intervals", width=max(6.4, 1.4 * len(names) + 2))
    if not names:
        return _empty(fig, ax, "no scored task yet")
    shown = headline(aggregate_metrics(next(iter(aggs.values()))))
    width = 0.8 / len(shown)
    for i, metric in enumerate(shown):
        for j, name in enumerate(names):
            x = j + (i - (len(shown) - 1) / 2) * width
            _bars(ax, [x], aggs[name], metric, width=width, color=f"C{i}",
                  label=metric if j == 0 else None)  # fmt: skip
    ax.set_xticks(range(len(names)), [f"{n}\n(n={_tasks(aggs[n])})" for n in names], fontsize=8)
    ax.legend(fontsize=8, ncols=len(shown), loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return _svg(fig)


def cost_vs_score(points: list[Point], metric: str | None = None) -> bytes:
    """Cost against one metric (by default the last of the headline ones: ARVO's ``iou``), one
    dot per attempt: 0 where it has no valid submission (as in the means)."""
    shown = headline(metric_names(p.outcome.scores for p in points))
    metric = metric or (shown[-1] if shown else "score")
    fig, ax = _figure(f"Cost against {metric} (one dot per attempt)")
    ax.set_xlabel("cost (USD)")
    ax.set_ylabel(metric)
    if not points:
        return _empty(fig, ax, "no ended task yet")
    colors = {"completed": "tab:blue", "failed": "tab:red", "cancelled": "tab:orange"}
    for status, color in colors.items():
        mine = [p for p in points if p.outcome.status == status]
        if mine:
            ax.scatter(
                [p.cost for p in mine],
                [_value(p.outcome, metric) for p in mine],
                c=color,
                label=status,
                alpha=0.7,
            )
    if not any(p.cost for p in points):  # every cost 0 (an offline agent): an axis from 0
        ax.set_xlim(0, 1)
        ax.set_xlabel("cost (USD): 0 for every attempt (no model was paid)")
    ax.legend(fontsize=8)
    return _svg(fig)


def _value(outcome: TaskOutcome, metric: str) -> float:
    """What an attempt counts for in the means: its score, or 0 without a valid submission."""
    scores = outcome.scores or {}
    counted = outcome.status == "completed" and scores.get("submitted", True) is not False
    return score_value(scores, metric) if counted else 0.0


def render(name: str, points: list[Point], aggregate: Aggregate) -> bytes:
    if name == "metrics":
        return metric_means(points, aggregate)
    if name == "bug_class":
        return by_group(points, "bug_class", "Scores per bug class", aggregate)
    if name == "fix_position":
        return by_group(
            points, "fix_position", "Scores per fix position (relative to the crash)", aggregate
        )
    if name == "cost":
        return cost_vs_score(points)
    raise KeyError(name)
