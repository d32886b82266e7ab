"""Scores broken down by bug class and by where the fix is relative to the crash.

A task's labels (``bug_class``: the sanitizer's SUMMARY type; ``fix_position``: crash-frame,
caller, free-stack or off-stack) are known for the bundled fixtures (``fixtures/catalog.py``,
``task.toml``); tasks without labels are grouped under ``unlabelled``. Failed tasks count 0, as
in the aggregate.
"""

from __future__ import annotations

from collections.abc import Callable

from services.green.kinds.arvo.scoring import METRICS
from services.green.report.results import Outcome

Labels = dict[str, dict[str, str]]


def known_labels() -> Labels:
    """The bundled fixtures' labels, or nothing when the fixtures are not installed."""
    try:
        from fixtures.catalog import task_labels
    except ImportError:  # green deployed without the repository's fixtures
        return {}
    return task_labels()


def breakdown(outcomes: list[Outcome], group: Callable[[Outcome], str]) -> list[dict]:
    """One row per group, sorted by name: ``{"group", "n", <metric>: mean}``."""
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(group(o) or "unlabelled", []).append(o)
    rows = []
    for name in sorted(groups):
        members = groups[name]
        row: dict = {"group": name, "n": len(members)}
        for m in METRICS:
            row[m] = sum(o.metric(m) for o in members) / len(members)
        rows.append(row)
    return rows


def breakdown_markdown(outcomes: list[Outcome], labels: Labels) -> list[str]:
    """The two tables (markdown lines), or nothing when no outcome has labels."""
    if not any(o.arvo_id in labels for o in outcomes):
        return []
    lines: list[str] = []
    for title, key in (("bug class", "bug_class"), ("fix position", "fix_position")):
        rows = breakdown(outcomes, lambda o, k=key: labels.get(o.arvo_id, {}).get(k, ""))
        lines += ["", f"## By {title}", ""]
        lines.append(f"| {title} | n | " + " | ".join(METRICS) + " |")
        lines.append("|---|---:|" + "---:|" * len(METRICS))
        for r in rows:
            cells = " | ".join(f"{r[m]:.3f}".rstrip("0").rstrip(".") or "0" for m in METRICS)
            lines.append(f"| {r['group']} | {r['n']} | {cells} |")
    return lines
