"""Scores broken down by bug class and by where the fix is relative to the crash.

A task's labels (``bug_class``: the sanitizer's SUMMARY type; ``fix_position``: crash-frame,
caller, free-stack or off-stack) are known for the bundled fixtures (``fixtures/catalog.py``,
``task.toml``); tasks without labels are grouped under ``unlabelled``. Each group is aggregated
exactly as the whole run is (:func:`services.arena.results.aggregate_outcomes`): a task's trials
averaged first, failures 0, unscorable tasks left out, ``n`` = tasks, each mean with its 95%
interval.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from services.arena.figures import with_interval
from services.arena.results import RunOutcome, aggregate_outcomes

Labels = dict[str, dict[str, str]]
"""Per task reference (``arvo:900001``): ``bug_class`` and ``fix_position``."""


def known_labels() -> Labels:
    """The bundled fixtures' labels, or nothing when the fixtures are not installed."""
    try:
        from fixtures.catalog import task_labels
    except ImportError:  # green deployed without the repository's fixtures
        return {}
    return task_labels()


def breakdown(
    outcomes: list[RunOutcome], group: Callable[[RunOutcome], str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """One row per group of ``outcomes`` (of one kind), sorted by name: ``{"group", "n",
    <metric>: interval}`` (the group's ``mean_all`` with its interval, as in the run's
    aggregate: ``mean``, ``ci_low``...)."""
    groups: dict[str, list[RunOutcome]] = {}
    for o in outcomes:
        groups.setdefault(group(o) or "unlabelled", []).append(o)
    rows = []
    for name in sorted(groups):
        agg = aggregate_outcomes(groups[name], lambda _kind: list(metrics))
        ivs = (agg.get("uncertainty") or {}).get("mean_all") or {}
        row: dict[str, Any] = {"group": name, "n": (agg.get("mean_all") or {}).get("n", 0)}
        row.update({m: ivs.get(m) or {"mean": None} for m in metrics})
        rows.append(row)
    return rows


def breakdown_markdown(
    outcomes: list[RunOutcome], labels: Labels, metrics: Sequence[str]
) -> list[str]:
    """The two tables (markdown lines), or nothing when no outcome has labels."""
    if not any(o.ref in labels for o in outcomes):
        return []
    lines: list[str] = []
    for title, key in (("bug class", "bug_class"), ("fix position", "fix_position")):
        rows = breakdown(outcomes, lambda o, k=key: labels.get(o.ref or "", {}).get(k, ""), metrics)
        lines += ["", f"## By {title}", ""]
        lines.append(f"| {title} | n | " + " | ".join(metrics) + " |")
        lines.append("|---|---:|" + "---:|" * len(metrics))
        for r in rows:
            cells = " | ".join(with_interval(r[m].get("mean"), r[m]) for m in metrics)
            lines.append(f"| {r['group']} | {r['n']} | {cells} |")
    lines += [
        "",
        "n: tasks of the group (trials averaged first; failures count 0, unscorable tasks are "
        "left out); brackets: 95% intervals, as in the aggregate.",
    ]
    return lines
