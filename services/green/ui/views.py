"""View models of the dashboard's pages: task filters, timelines, the result comparison."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import HTTPException, status

from services.green.edge.disclosure import Disclosure
from services.green.kinds.base import TaskKind
from services.green.kinds.metrics import headline_metrics
from services.green.store.crud import UNFINISHED
from services.green.store.models import Task, TaskPublic, TaskStatus
from services.green.store.offloop import Database
from services.green.ui.facts import TaskFacts
from services.shared.scores import headline, metric_names
from services.shared.text import clip_middle

PAGE_SIZE = 50
STATUS_CHOICES = ["", "unfinished", *(s.value for s in TaskStatus)]
NO_RUN = "none"
"""The ``run`` filter value of tasks started one by one (no assessment)."""


@dataclass
class TaskFilters:
    status: str = ""
    kind: str = ""
    bug_class: str = ""
    run: str = ""
    page: int = 1

    def __post_init__(self) -> None:
        if self.status not in STATUS_CHOICES:
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"unknown status {self.status!r}; one of: {', '.join(filter(None, STATUS_CHOICES))}",
            )
        if self.page < 1:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "page starts at 1")

    def statuses(self) -> list[TaskStatus]:
        if self.status == "unfinished":
            return list(UNFINISHED)
        return [TaskStatus(self.status)] if self.status else []

    def assessment_id(self) -> str | None:
        if not self.run:
            return None
        return "" if self.run == NO_RUN else self.run

    def query(self, **changes: Any) -> str:
        """The query string of these filters with some changed (for links)."""
        values = {**self.__dict__, **changes}
        return "&".join(f"{k}={v}" for k, v in values.items() if v not in ("", None, 1))


@dataclass(frozen=True)
class ScoreColumns:
    """The score columns of a list of tasks: each kind's own (its headline metrics)."""

    by_kind: dict[str, list[str]]

    @property
    def shared(self) -> list[str] | None:
        """The columns of a list of one kind; None for several (each row's cell then names its
        kind's metrics) or none."""
        return next(iter(self.by_kind.values())) if len(self.by_kind) == 1 else None


def score_columns(
    kinds: Mapping[str, TaskKind], rows: Iterable[tuple[str, Mapping[str, Any] | None]]
) -> ScoreColumns:
    """The columns of rows of (kind, scores): a kind green serves shows the metrics it heads
    with (:func:`headline_metrics`); another, the headline of what its records hold."""
    records: dict[str, list[Mapping[str, Any] | None]] = {}
    for kind, scores in rows:
        records.setdefault(kind, []).append(scores)
    return ScoreColumns(
        {
            kind: headline_metrics(kinds.get(kind)) or headline(metric_names(found))
            for kind, found in records.items()
        }
    )


def run_name(record: Any) -> str:
    """A run as the dashboard names it: its name (``arena run --run``), else its id's prefix."""
    name = (getattr(record, "request", None) or {}).get("name")
    return name if isinstance(name, str) and name else str(record.id)[:8]


async def run_names(db: Database, runs, ids: Iterable[str | None]) -> dict[str, str]:
    """The names of the runs ``ids`` (an id of no record: its prefix)."""
    out = {}
    for run_id in {i for i in ids if i}:
        rec = await db.run(runs.get, run_id)
        out[run_id] = run_name(rec) if rec is not None else run_id[:8]
    return out


def trials_shown(tasks: Iterable[Any]) -> bool:
    """Whether a list numbers its rows' trials (some task of it is a second trial or later)."""
    return any((getattr(t, "trial", 1) or 1) > 1 for t in tasks)


async def task_page(
    store,
    db: Database,
    facts: TaskFacts,
    f: TaskFilters,
    show: Disclosure,
    runs=None,
    kinds: Mapping[str, TaskKind] | None = None,
) -> dict[str, Any]:
    """One page of the task list with everything its filters need (scores as ``show`` lets
    its caller see them; each kind's own columns; the runs by name from ``runs``)."""
    ids = await db.run(store.distinct_ids)
    classes = await facts.bug_classes(ids)
    ref_ids = None
    if f.bug_class:
        ref_ids = {ref_id for (_, ref_id), c in classes.items() if c == f.bug_class}
    rows, total = await db.run(
        store.page,
        statuses=f.statuses(),
        kind=f.kind or None,
        ref_ids=ref_ids,
        assessment_id=f.assessment_id(),
        offset=(f.page - 1) * PAGE_SIZE,
        limit=PAGE_SIZE,
    )
    items = []
    withheld = await show.withheld(rows)
    for r in rows:
        ended = TaskStatus(r.status).terminal and r.id not in withheld
        items.append(
            {
                "row": r,
                "bug_class": classes.get((r.kind, r.ref_id), "unknown"),
                "scores": r.scores if ended and r.scores else None,
            }
        )
    return {
        "items": items,
        "columns": score_columns(
            kinds or {}, ((r.kind, it["scores"]) for r, it in zip(rows, items, strict=True))
        ),
        "run_names": await run_names(db, runs, (r.assessment_id for r in rows)) if runs else {},
        "trials": trials_shown(rows),
        "total": total,
        "pages": max(1, -(-total // PAGE_SIZE)),
        "live": any(not TaskStatus(r.status).terminal for r in rows),
        "kinds": sorted({k for k, _ in ids}),
        "bug_classes": sorted(set(classes.values())),
        "statuses": STATUS_CHOICES,
    }


def timeline(task: Task | TaskPublic) -> list[dict[str, Any]]:
    """The recorded moments of a task (the page adds live transitions as they come)."""
    out: list[dict[str, Any]] = [{"at": task.created_at, "status": "queued", "detail": ""}]
    if task.started_at or task.status is TaskStatus.preparing:  # its moment is not recorded
        out.append(
            {"at": None, "status": "preparing", "detail": "assets fetched, container started"}
        )
    if task.started_at:
        out.append({"at": task.started_at, "status": "running", "detail": "sent to purple"})
    if task.finished_at:
        detail = task.end_reason or ""
        if task.error and task.error != detail:
            detail = f"{detail}: {task.error}" if detail else task.error
        out.append({"at": task.finished_at, "status": task.status.value, "detail": detail})
    elif not task.started_at and task.status not in (TaskStatus.queued, TaskStatus.preparing):
        out.append({"at": task.updated_at, "status": task.status.value, "detail": ""})
    return out


def duration(start: datetime | None, end: datetime | None) -> str:
    if not start or not end:
        return "-"
    seconds = (end - start).total_seconds()
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


def _gt_lines(ground_truth: dict[str, Any]) -> dict[str, set[int]]:
    return {f["path"]: set(f.get("lines") or []) for f in ground_truth.get("files", [])}


async def result_view(facts: TaskFacts, view: TaskPublic) -> dict[str, Any] | None:
    """The ranked submission next to the ground truth, with hit or miss per location, the
    explanation and the source around each location and region. None until the API shows the
    ground truth (the task has ended, and whatever else the API requires)."""
    if view.ground_truth is None or view.scores is None:
        return None
    scores, gt = view.scores, view.ground_truth
    locations = scores.get("locations") or []
    regions = scores.get("regions") or []
    spans = [
        (loc.get("matched_file") or loc.get("normalized") or loc["file"], loc["line_start"],
         loc["line_end"])
        for loc in locations
    ] + [(r["file"], r["start"], r["end"]) for r in regions]  # fmt: skip
    snippets = await facts.snippets(view.kind, view.ref_id, spans)
    metrics = {k: scores[k] for k in metric_names([scores])}
    heads = headline_metrics(facts.orch.kinds.get(view.kind)) or headline(metrics)
    return {
        "scores": scores,
        "metrics": metrics,
        "headline": {m: metrics[m] for m in heads if m in metrics},
        "locations": list(zip(locations, snippets[: len(locations)], strict=True)),
        "regions": list(zip(regions, snippets[len(locations) :], strict=True)),
        "gt_lines": _gt_lines(gt),
        "ground_truth": gt,
        "submission": view.submission,
        "explanation": scores.get("explanation") or [],
        **submitted_work(view.submission, scores),
    }


INPUT_SHOWN = 1024
"""Bytes of a submitted input the task page shows (as a hex dump)."""
PATCH_SHOWN = 40_000
"""Characters of a submitted patch the task page shows."""


def submitted_work(submission: dict[str, Any] | None, scores: dict[str, Any]) -> dict[str, Any]:
    """What the reproduce and fix kinds' task pages show beside the verdict: the submitted
    input (a hex dump of its first bytes) or patch, and each run of it (build, input, verdict,
    exit status, output), the build's log."""
    out: dict[str, Any] = {"runs": scores.get("runs") or [], "build_log": scores.get("build_log")}
    sub = submission or {}
    if isinstance(sub.get("data"), str):
        raw = base64.b64decode(sub["data"])[:INPUT_SHOWN]
        out["input"] = {
            "size": sub.get("size"),
            "sha256": sub.get("sha256"),
            "dump": hex_dump(raw),
            "cut": (sub.get("size") or 0) > INPUT_SHOWN,
        }
    if isinstance(sub.get("patch"), str):
        out["patch"] = clip_middle(sub["patch"], PATCH_SHOWN)
    return out


def hex_dump(data: bytes, width: int = 16) -> str:
    """``xxd``-like lines: offset, hex bytes, printable characters."""
    lines = []
    for at in range(0, len(data), width):
        chunk = data[at : at + width]
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}  {chunk.hex(' '):<{3 * width}} {text}")
    return "\n".join(lines)
