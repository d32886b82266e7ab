"""The live view of a batch: a progress bar over a table of the tasks in flight and the last
ones that ended (rich).

The metric columns are those found in the scores so far (any kind), without the ``@k`` ones
for k > 1 (ARVO: ``file@1 func@1 line@1 iou``); ``report.md`` has them all. The table fits the
terminal's width: the task and its status are never cut; what does not fit (the id, then the
cost, then the last metrics) is left out, and the caption says so."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
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

    def table(self, width: int | None = None) -> Table:
        """The rows as a table at most ``width`` characters wide, less one (a line that fills
        the terminal leaves its cursor on it, where the next line may land)."""
        names = self.metrics()
        active = sorted((r for r in self.rows.values() if not r.ended), key=lambda r: r.seq)
        ended = sorted((r for r in self.rows.values() if r.ended), key=lambda r: -r.seq)
        shown = (active + ended)[: self.max_rows]
        cells = {
            "task": [r.label for r in shown],
            "status": [r.status for r in shown],
            "steps": [str(r.steps) for r in shown],
            **{m: [_metric(r.scores or {}, m) for r in shown] for m in names},
            "cost": [f"{r.cost:.4f}" for r in shown],
            "id": [r.task_id[:8] for r in shown],
        }
        columns = _fitting(cells, (width - 1) if width else None)
        table = Table(expand=False, show_edge=False, pad_edge=False)
        for col in columns:
            left = col in ("task", "id", "status")
            table.add_column(col, justify="left" if left else "right", no_wrap=True)
        for i, r in enumerate(shown):
            style = STATUS_STYLE.get(r.status)
            status = f"[{style}]{r.status}[/]" if style else r.status
            table.add_row(*(status if c == "status" else cells[c][i] for c in columns))
        notes = []
        if hidden := len(self.rows) - len(shown):
            notes.append(f"… and {hidden} more")
        if left_out := [c for c in cells if c not in columns]:
            notes.append(f"not shown at this width: {' '.join(left_out)}")
        if notes:
            table.caption = "; ".join(notes)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.progress
        yield self.table(options.max_width)


ORDER = ("task", "status", "steps")
"""Always shown; then the metrics, the cost and the id, as the width allows."""


def _fitting(cells: dict[str, list[str]], width: int | None) -> list[str]:
    """The columns of ``cells`` (in its order) that fit ``width``: each as wide as its widest
    cell or header, one space either side but at the table's edges, a rule between; the id,
    the cost and the last metrics go first."""
    need = {c: max([len(c), *map(len, v)]) for c, v in cells.items()}
    keep = list(cells)

    def total(cols: list[str]) -> int:
        return sum(need[c] for c in cols) + 3 * (len(cols) - 1)

    drop = ["id", "cost", *reversed([c for c in cells if c not in (*ORDER, "cost", "id")])]
    while width is not None and total(keep) > width and drop:
        keep.remove(drop.pop(0))
    return keep
