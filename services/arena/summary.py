"""The console summary of a run that ``arena run`` and ``arena report`` print: one table per
task kind (each metric over its own kind's tasks), the narrow view's metrics with their 95%
intervals, the aggregate's notes and the records left incomplete."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from services.arena.figures import num, with_interval
from services.arena.records import gaps
from services.arena.results import RunResults
from services.shared.scores import headline


def print_summary(results: RunResults, console: Console) -> None:
    title = f"run {results.run}: {len(results.tasks)}/{len(results.slots())} ended"
    parts = results.by_kind()
    for kind, part in parts:  # one table per kind: each metric over its own kind's tasks
        _kind_summary(part, title if len(parts) == 1 else f"{title}; {kind} tasks", console)


def _kind_summary(results: RunResults, title: str, console: Console) -> None:
    agg = results.aggregate
    metrics = headline(results.metrics())  # report.md has every metric
    table = Table(title=title)
    table.add_column("mean over")
    table.add_column("n", justify="right")
    for m in metrics:
        table.add_column(m, justify="right")
    for label, key in (("all tasks", "mean_all"), ("non-infra", "mean_non_infra")):
        means = agg.get(key) or {}
        table.add_row(label, str(means.get("n", 0)), *(num(means.get(m)) for m in metrics))
    console.print(table)
    ivs = (agg.get("uncertainty") or {}).get("mean_all") or {}
    if ivs:
        console.print(
            escape(
                "  95% intervals (all tasks): "
                + ", ".join(
                    f"{m} {with_interval((agg.get('mean_all') or {}).get(m), ivs.get(m))}"
                    for m in metrics
                )
            ),
            highlight=False,
        )
    for line in agg.get("explanation", []):
        console.print(f"  {escape(line)}", highlight=False)
    missing = gaps(results)
    if missing:
        console.print(
            f"[yellow]{len(missing)} record(s) incomplete[/] ("
            + ", ".join(f"{g.label}: {', '.join(g.fields)}" for g in missing[:5])
            + (", ..." if len(missing) > 5 else "")
            + '): see report.md, "Incomplete records"'
        )
