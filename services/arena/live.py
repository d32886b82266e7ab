"""The live view of a batch: a progress bar over a table of the tasks in flight and the last
ones that ended (rich).

The metric columns are those found in the scores so far (any kind), without the ``@k`` ones
for k > 1 so the table fits a terminal (ARVO: ``file@1 func@1 line@1 iou``); ``report.md`` has
them all."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from services.arena.results import RunOutcome
from services.shared.scores import headline, metric_names

STATUS_STYLE = {"completed": "green", "failed": "red", "cancelled": "yellow"}


@dataclass
class Row:
    label: str
    status: str = "waiting"
    task_id: str = ""
    steps: int = 0
    cost: float = 0.0
    scores: dict[str, Any] | None = None
    ended: bool = False
    seq: int = 0


def _metric(scores: dict[str, Any], name: str) -> str:
    if name not in scores:
        return "·"
    v = float(scores[name])
    return f"{v:g}" if v in (0.0, 1.0) else f"{v:.2f}"


class LiveView:
    """A progress bar (done/total, elapsed) over a table of the tasks in flight and the last
    ones that ended."""

    def __init__(self, total: int, done: int, max_rows: int = 20) -> None:
        self.progress = Progress(
            TextColumn("[bold]tasks"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("•"),
            TimeElapsedColumn(),
        )
        self.bar = self.progress.add_task("tasks", total=total, completed=done)
        self.rows: dict[str, Row] = {}
        self.max_rows = max_rows
        self._seq = 0
        self.names: dict[str, None] = {}
        """The metric columns, in the order they were first seen."""

    def metrics(self, scores: dict[str, Any] | None = None) -> list[str]:
        """The metric columns (after adding those of ``scores``)."""
        for name in headline(metric_names([scores])):
            self.names.setdefault(name, None)
        return [n for n in self.names if n in (scores if scores is not None else self.names)]

    def update(self, label: str, **changes: Any) -> None:
        row = self.rows.setdefault(label, Row(label))
        for k, v in changes.items():
            setattr(row, k, v)
        self._seq += 1
        row.seq = self._seq

    def ended(self, outcome: RunOutcome) -> None:
        self.update(
            outcome.label,
            status=outcome.status,
            task_id=outcome.task_id or "",
            steps=outcome.steps,
            cost=outcome.cost,
            scores=outcome.scores,
            ended=True,
        )
        self.progress.advance(self.bar)

    def table(self) -> Table:
        table = Table(expand=False, show_edge=False, pad_edge=False)
        names = self.metrics()
        for col in ("task", "id", "status", "steps", *names, "cost"):
            table.add_column(
                col, justify="right" if col not in ("task", "id", "status") else "left"
            )
        active = sorted((r for r in self.rows.values() if not r.ended), key=lambda r: r.seq)
        ended = sorted((r for r in self.rows.values() if r.ended), key=lambda r: -r.seq)
        shown = (active + ended)[: self.max_rows]
        for r in shown:
            s = r.scores or {}
            style = STATUS_STYLE.get(r.status)
            table.add_row(
                r.label,
                r.task_id[:8],
                f"[{style}]{r.status}[/]" if style else r.status,
                str(r.steps),
                *(_metric(s, m) for m in names),
                f"{r.cost:.4f}",
            )
        hidden = len(self.rows) - len(shown)
        if hidden > 0:
            table.caption = f"… and {hidden} more"
        return table

    def __rich__(self) -> Group:
        return Group(self.progress, self.table())
