"""The live view of a batch: a progress bar over a table of the tasks in flight and the last
ones that ended (rich)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.console import Group
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from services.arena.results import Outcome

COLUMNS = ("arvo", "task", "status", "steps", "file@1", "func@1", "line@1", "iou", "cost")
STATUS_STYLE = {"completed": "green", "failed": "red", "cancelled": "yellow"}


@dataclass
class Row:
    arvo_id: str
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
    return f"{float(scores[name]):.2f}" if name == "iou" else f"{float(scores[name]):g}"


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

    def update(self, arvo_id: str, **changes: Any) -> None:
        row = self.rows.setdefault(arvo_id, Row(arvo_id))
        for k, v in changes.items():
            setattr(row, k, v)
        self._seq += 1
        row.seq = self._seq

    def ended(self, outcome: Outcome) -> None:
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
        for col in COLUMNS:
            table.add_column(
                col, justify="right" if col not in ("arvo", "task", "status") else "left"
            )
        active = sorted((r for r in self.rows.values() if not r.ended), key=lambda r: r.seq)
        ended = sorted((r for r in self.rows.values() if r.ended), key=lambda r: -r.seq)
        shown = (active + ended)[: self.max_rows]
        for r in shown:
            s = r.scores or {}
            style = STATUS_STYLE.get(r.status)
            table.add_row(
                f"arvo:{r.arvo_id}",
                r.task_id[:8],
                f"[{style}]{r.status}[/]" if style else r.status,
                str(r.steps),
                *(_metric(s, m) for m in ("file@1", "func@1", "line@1", "iou")),
                f"{r.cost:.4f}",
            )
        hidden = len(self.rows) - len(shown)
        if hidden > 0:
            table.caption = f"… and {hidden} more"
        return table

    def __rich__(self) -> Group:
        return Group(self.progress, self.table())
