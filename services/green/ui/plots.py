"""Per-run plots as SVG, drawn on the server with matplotlib (no JavaScript charting).

matplotlib is imported at the first plot, not with green: it is a third of green's import time,
and a replica must be ready to serve within seconds of its start (docs/deployment.md).
"""

from __future__ import annotations

import io
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

from services.shared.scores import headline, metric_names

PLOTS = ("metrics", "bug_class", "fix_position", "cost")
"""The plot names of a run page."""


@dataclass(frozen=True)
class Point:
    """One ended task of a run, as the plots see it."""

    metrics: dict[str, float] = field(default_factory=dict)
    """Empty when the task is not scorable (it stays out of the means)."""
    cost: float = 0.0
    bug_class: str = "unknown"
    fix_position: str = "unknown"
    status: str = "completed"


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


def _metrics(points: list[Point]) -> list[str]:
    """The metrics of the run's scores, in the order its kind reports them."""
    return metric_names(p.metrics for p in points)


def metric_means(points: list[Point]) -> bytes:
    scored = [p for p in points if p.metrics]
    fig, ax = _figure(f"Mean score per metric (n={len(scored)})")
    if not scored:
        return _empty(fig, ax, "no scored task yet")
    names = _metrics(scored)
    means = [sum(p.metrics.get(m, 0.0) for p in scored) / len(scored) for m in names]
    bars = ax.bar(names, means, color="tab:blue")
    ax.bar_label(bars, fmt="%.2f", fontsize=8)
    return _svg(fig)


def by_group(points: list[Point], attr: str, title: str) -> bytes:
    groups: dict[str, list[Point]] = defaultdict(list)
    for p in points:
        if p.metrics:
            groups[getattr(p, attr)].append(p)
    names = sorted(groups)
    fig, ax = _figure(title, width=max(6.4, 1.4 * len(names) + 2))
    if not names:
        return _empty(fig, ax, "no scored task yet")
    shown = headline(_metrics([p for n in names for p in groups[n]]))
    width = 0.8 / len(shown)
    for i, metric in enumerate(shown):
        xs = [j + (i - (len(shown) - 1) / 2) * width for j in range(len(names))]
        ys = [sum(p.metrics.get(metric, 0.0) for p in groups[n]) / len(groups[n]) for n in names]
        ax.bar(xs, ys, width, label=metric)
    ax.set_xticks(range(len(names)), [f"{n}\n(n={len(groups[n])})" for n in names], fontsize=8)
    ax.legend(fontsize=8, ncols=len(shown), loc="upper center", bbox_to_anchor=(0.5, -0.2))
    return _svg(fig)


def cost_vs_score(points: list[Point], metric: str | None = None) -> bytes:
    """Cost against one metric (by default the last of the headline ones: ARVO's ``iou``)."""
    shown = headline(_metrics(points))
    metric = metric or (shown[-1] if shown else "score")
    fig, ax = _figure(f"Cost against {metric} (one dot per task)")
    ax.set_xlabel("cost (USD)")
    ax.set_ylabel(metric)
    if not points:
        return _empty(fig, ax, "no ended task yet")
    colors = {"completed": "tab:blue", "failed": "tab:red", "cancelled": "tab:orange"}
    for status, color in colors.items():
        mine = [p for p in points if p.status == status]
        if mine:
            ax.scatter(
                [p.cost for p in mine],
                [p.metrics.get(metric, 0.0) for p in mine],
                c=color,
                label=status,
                alpha=0.7,
            )
    ax.legend(fontsize=8)
    return _svg(fig)


def render(name: str, points: list[Point]) -> bytes:
    if name == "metrics":
        return metric_means(points)
    if name == "bug_class":
        return by_group(points, "bug_class", "Scores per bug class")
    if name == "fix_position":
        return by_group(points, "fix_position", "Scores per fix position (relative to the crash)")
    if name == "cost":
        return cost_vs_score(points)
    raise KeyError(name)
