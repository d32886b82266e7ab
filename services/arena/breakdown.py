"""Scores broken down by bug class and by where the fix is relative to the crash.

A task's labels (``bug_class``: the sanitizer's SUMMARY type; ``fix_position``: crash-frame,
caller, free-stack or off-stack) are known for the bundled fixtures (``fixtures/catalog.py``,
``task.toml``); tasks without labels are grouped under ``unlabelled``. Failed tasks count 0, as
in the aggregate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from services.arena.results import RunOutcome

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
) -> list[dict]:
    """One row per group, sorted by name: ``{"group", "n", <metric>: mean}``."""
    groups: dict[str, list[RunOutcome]] = {}
    for o in outcomes:
        groups.setdefault(group(o) or "unlabelled", []).append(o)
    rows = []
    for name in sorted(groups):
        members = groups[name]
        row: dict = {"group": name, "n": len(members)}
        for m in metrics:
            row[m] = sum(o.metric(m) for o in members) / len(members)
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
            cells = " | ".join(f"{r[m]:.3f}".rstrip("0").rstrip(".") or "0" for m in metrics)
            lines.append(f"| {r['group']} | {r['n']} | {cells} |")
    return lines
