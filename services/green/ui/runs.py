"""The runs pages: every assessment with progress, scores and failures; one run with its plots."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, Response

from services.green.api.query_bounds import MAX_PAGE
from services.green.assessments.runner import AssessmentRunner
from services.green.edge.disclosure import Disclosure
from services.green.kinds.metrics import Declares, headline_metrics
from services.green.store.models import AssessmentRecord, Task
from services.green.store.offloop import Database
from services.green.ui import plots
from services.green.ui.auth import disclosure, require_page
from services.green.ui.facts import TaskFacts
from services.green.ui.templating import render
from services.green.ui.views import NO_RUN, score_columns, trials_shown
from services.shared.logging import get_logger
from services.shared.outcome import TaskOutcome
from services.shared.scores import aggregate_metrics, headline, kind_aggregates

log = get_logger("services.green.ui")
router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_page)])
RUNS_PER_PAGE = 20


def _db(request: Request) -> Database:
    return request.app.state.orchestrator.db


async def counts(request: Request, run_id: str) -> dict[str, Any]:
    """Progress of a run from one grouped query: tasks per status, failures, cost."""
    store = request.app.state.orchestrator.store
    rows = await _db(request).run(store.run_counts, "" if run_id == NO_RUN else run_id)
    by_status: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    for status_, kind, n, _ in rows:
        by_status[status_.value] += n
        if kind:
            failures[str(getattr(kind, "value", kind))] += n
    ended = sum(n for s, _, n, _ in rows if s.terminal)
    return {
        "id": run_id,
        "n": sum(by_status.values()),
        "ended": ended,
        "counts": dict(by_status),
        "infra": failures.get("infra", 0),
        "agent": failures.get("agent", 0),
        "cost": sum(c for *_, c in rows),
        "aggregate": None,
    }


def aggregate(run_id: str, scored: list[Task], runner: AssessmentRunner) -> dict[str, Any] | None:
    """Aggregate scores over ``scored``: the ended tasks whose scores the viewer may see
    (:meth:`Disclosure.scored`; failures count 0, infra ones apart)."""
    ended = [t for t in scored if t.status.terminal]
    try:
        return runner.aggregate([TaskOutcome.of(t) for t in ended]) if ended else None
    except ValueError as exc:  # a stored score the aggregate cannot read: say so, do not fail
        log.warning("ui.aggregate_failed", run=run_id, error=str(exc)[:500])
        return {"error": f"scores could not be aggregated: {str(exc)[:300]}"}


async def summarize(request: Request, run_id: str, rec: AssessmentRecord | None) -> dict[str, Any]:
    """Progress, aggregate scores and failures split into infra and agent. A finished
    assessment's aggregate is the one it recorded, unless the viewer may not see every score it
    was made of; otherwise it is computed now, of what the viewer may see."""
    summary = await counts(request, run_id)
    show = disclosure(request)
    recorded = (rec.result or {}).get("aggregate") if rec is not None else None
    final = recorded is not None and rec is not None and rec.status.terminal
    if final and show.caller.operator:  # the operator sees every score
        summary["aggregate"] = recorded
        return summary
    tasks = await run_tasks_of(request, run_id)
    scored = await show.scored(tasks)
    every = len(scored) == sum(t.status.terminal for t in tasks)  # none withheld
    summary["aggregate"] = (
        recorded if final and every else aggregate(run_id, scored, request.app.state.assessments)
    )
    return summary


async def run_record(request: Request, run_id: str) -> AssessmentRecord | None:
    """A run's record (None for the tasks of no run); 404 when there is no such run."""
    if run_id == NO_RUN:
        return None
    rec = await _db(request).run(request.app.state.assessment_store.get, run_id)
    if rec is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no run {run_id}")
    return rec


async def run_tasks_of(request: Request, run_id: str, ground_truth: bool = False) -> list[Task]:
    """A run's tasks (the ground truth only when asked: the views drop it)."""
    store = request.app.state.orchestrator.store
    run = "" if run_id == NO_RUN else run_id
    return list(await _db(request).run(store.run_tasks, run, ground_truth=ground_truth))


def _headline_of(agg: dict[str, Any], kinds: Mapping[str, Declares]) -> list[str]:
    """The metrics of an aggregate its row shows: the headline of the kind whose metrics these
    are, else the aggregate's own headline (:func:`services.shared.scores.headline`)."""
    metrics = list(agg.get("metrics") or (agg.get("mean_all") or {}).keys())
    metrics = [m for m in metrics if m != "n"]
    for kind in kinds.values():
        declared = set(kind.traits.metrics)
        if declared and set(metrics) <= declared:
            return [m for m in headline_metrics(kind) or metrics if m in metrics]
    return headline(metrics)


def headline_means(
    agg: dict[str, Any] | None, kinds: Mapping[str, Declares]
) -> list[dict[str, Any]]:
    """A run's row on the runs page: per kind (a run of one: one group, unnamed), the means over
    every task of its headline metrics, each with its interval. The full table is on the run's
    page."""
    if not agg or "error" in agg:
        return []
    parts = kind_aggregates(agg)
    groups = []
    for kind, one in parts.items():
        means, ivs = one.get("mean_all") or {}, (one.get("uncertainty") or {}).get("mean_all") or {}
        own = [m for m in headline_metrics(kinds.get(kind)) or [] if m in means]
        cells = [
            {"metric": m, "mean": means.get(m), "iv": ivs.get(m) or {}}
            for m in own or _headline_of(one, kinds)
        ]
        label = kind if len(parts) > 1 else None
        groups.append({"kind": label, "n": means.get("n") or 0, "cells": cells})
    return groups


@router.get("", response_class=HTMLResponse)
async def runs(request: Request, page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1) -> Response:
    records, total = await _db(request).run(
        request.app.state.assessment_store.list, (page - 1) * RUNS_PER_PAGE, RUNS_PER_PAGE
    )
    kinds = request.app.state.orchestrator.kinds
    rows = []
    for rec in records:
        summary = await summarize(request, rec.id, rec)
        summary["headline"] = headline_means(summary["aggregate"], kinds)
        rows.append((rec, summary))
    single = await counts(request, NO_RUN)  # scores: on its run page
    return render(
        request,
        "runs.html",
        rows=rows,
        single=single,
        page=page,
        pages=max(1, -(-total // RUNS_PER_PAGE)),
        default_purple=request.app.state.orchestrator.settings.purple_url,
    )


async def points(facts: TaskFacts, tasks: list[Task], show: Disclosure) -> list[plots.Point]:
    """The ended tasks of a run as plot points, with the scores the viewer may see. The fix
    position needs the ground truth: it is computed only where the REST API would show it."""
    out: list[plots.Point] = []
    allowed, withheld = await show.revealable(tasks), await show.withheld(tasks)
    for t in tasks:
        if not t.status.terminal or t.id in withheld:
            continue
        view = show.view(t, t.id in allowed, t.id in withheld)
        outcome = TaskOutcome.of(t).model_copy(update={"scores": view.scores})
        out.append(
            plots.Point(
                outcome=outcome,
                cost=t.cost,
                bug_class=await facts.group(t.kind, t.ref_id),
                fix_position=await facts.position(t.kind, t.ref_id, view.ground_truth),
            )
        )
    return out


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run(run_id: str, request: Request) -> Response:
    record = await run_record(request, run_id)
    tasks = await run_tasks_of(request, run_id, ground_truth=True)  # for the views, which drop it
    show = disclosure(request)
    summary = await counts(request, run_id)
    summary["aggregate"] = aggregate(
        run_id, await show.scored(tasks), request.app.state.assessments
    )
    views = await show.tasks(tasks)  # each task's scores as the REST API shows them
    kinds = request.app.state.orchestrator.kinds
    return render(
        request,
        "run.html",
        record=record,
        summary=summary,
        tasks=views,
        columns=score_columns(kinds, ((t.kind, _ended_scores(t)) for t in views)),
        trials=trials_shown(views),
        plots=plots.PLOTS,
    )


def _ended_scores(task: Any) -> dict[str, Any] | None:
    return task.scores if task.status.terminal else None


@router.get("/runs/{run_id}/plots/{name}.svg")
async def plot(run_id: str, name: str, request: Request) -> Response:
    if name not in plots.PLOTS:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND, f"no plot {name!r}; one of {', '.join(plots.PLOTS)}"
        )
    await run_record(request, run_id)
    pts = await points(
        request.app.state.ui_facts,
        await run_tasks_of(request, run_id, ground_truth=True),
        disclosure(request),
    )
    runner = request.app.state.assessments

    def side_by_side(outcomes: list[TaskOutcome]) -> dict[str, Any]:
        """The run's aggregate, a run of several kinds' as one: every kind's metrics, each
        with its mean and interval over its own kind's tasks (n: all of them)."""
        kinds = kind_aggregates(runner.aggregate(outcomes))
        if len(kinds) <= 1:
            return next(iter(kinds.values()), {})
        view: dict[str, Any] = {"metrics": [], "mean_all": {"n": 0}, "uncertainty": {}}
        ivs = view["uncertainty"].setdefault("mean_all", {})
        for agg in kinds.values():
            names = aggregate_metrics(agg)
            view["metrics"] += names
            view["mean_all"]["n"] += int((agg.get("mean_all") or {}).get("n") or 0)
            view["mean_all"].update({m: (agg.get("mean_all") or {}).get(m) for m in names})
            ivs.update(
                {m: ((agg.get("uncertainty") or {}).get("mean_all") or {}).get(m) for m in names}
            )
        return view

    svg = await asyncio.to_thread(plots.render, name, pts, side_by_side)  # matplotlib is CPU-bound
    return Response(svg, media_type="image/svg+xml", headers={"Cache-Control": "no-store"})
