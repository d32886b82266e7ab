"""The task pages of the dashboard: the list (filters, live status), one task, start, cancel."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from services.green.api.query_bounds import MAX_PAGE
from services.green.api.routes.runs import refuse_foreign_task
from services.green.edge.intake_limits import BugBusy, TooBusy
from services.green.kinds.errors import UnknownTask
from services.green.kinds.registry import parse_ref
from services.green.store.models import CommandPublic
from services.green.tasks.live_task import TaskNotFound
from services.green.tasks.orchestrator import Orchestrator, TaskOptions
from services.green.ui.auth import caller, check_form, disclosure, require_page
from services.green.ui.login import form_fields
from services.green.ui.templating import render
from services.green.ui.views import (
    TaskFilters,
    duration,
    result_view,
    run_names,
    task_page,
    timeline,
)
from services.shared.audit import FLAGS, audit

router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_page)])
MAX_COMMANDS_SHOWN = 2000


def _orch(request: Request) -> Orchestrator:
    return request.app.state.orchestrator


@router.get("/tasks", response_class=HTMLResponse)
async def tasks(
    request: Request,
    status_: Annotated[str, Query(alias="status")] = "",
    kind: str = "",
    bug_class: str = "",
    run: str = "",
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    fragment: str = "",
) -> Response:
    f = TaskFilters(status_, kind, bug_class, run, page)
    orch = _orch(request)
    data = await task_page(
        orch.store,
        orch.db,
        request.app.state.ui_facts,
        f,
        disclosure(request),
        runs=request.app.state.assessment_store,
        kinds=orch.kinds,
    )
    name = "task_rows.html" if fragment == "rows" else "tasks.html"
    return render(request, name, f=f, **data)


@router.post("/tasks")
async def start_task(request: Request) -> Response:
    """The start form: a task reference, optionally a purple URL and a step limit."""
    form = await form_fields(request)
    check_form(request, form)
    ref, purple = form.get("task", "").strip(), form.get("purple_url", "").strip() or None
    steps = form.get("max_steps", "").strip()
    error, code = None, 422
    if not ref:
        error = "Give a task, e.g. arvo:900007."
    elif steps and not (steps.isdigit() and 1 <= int(steps) <= 10_000):
        error = "The step limit is a number from 1 to 10000."
    else:
        opts = TaskOptions(purple_url=purple, max_steps=int(steps) if steps else None)
        try:
            parsed = parse_ref(ref)
            # the same intake bounds as REST and A2A (rate per credential, queued tasks)
            await request.app.state.intake.admit(caller(request), [parsed])
            task = await _orch(request).create_task(parsed, opts)
            return RedirectResponse(f"/ui/tasks/{task.id}", status_code=303)
        except UnknownTask as exc:
            error, code = f"Unknown task {ref}: {exc}", 404
        except TooBusy as exc:
            error, code = str(exc), 429
        except BugBusy as exc:
            error, code = str(exc), 409
        except ValueError as exc:
            error = str(exc)
    return render(request, "start_error.html", code, error=error, form=form)


@router.get("/tasks/{task_id}", response_class=HTMLResponse)
async def task(task_id: str, request: Request) -> Response:
    orch = _orch(request)
    try:
        row = await orch.get(task_id)
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None
    show = disclosure(request)
    withheld = bool(await show.withheld([row]))  # its bug has an unfinished task: the operator's
    view = show.view(row, bool(await show.revealable([row])), withheld)
    facts = request.app.state.ui_facts
    report = await facts.report(view.kind, view.ref_id)
    stored = (
        [] if withheld else await orch.db.run(orch.store.commands, task_id, 0, MAX_COMMANDS_SHOWN)
    )
    commands = [CommandPublic.model_validate(c, from_attributes=True) for c in stored]
    flags = audit(
        [c.command for c in stored],
        None if withheld else row.submission,
        None if withheld else (row.scores or {}).get("project"),
        leak=(view.scores or {}).get("leak"),  # what this caller may see of it
    )
    return render(
        request,
        "task.html",
        task=view,
        audit=flags,
        audit_names=FLAGS,
        report=report,
        commands=commands,
        last_seq=commands[-1].seq if commands else 0,
        events=timeline(view),
        took=duration(view.started_at, view.finished_at),
        result=await result_view(facts, view),
        withheld=withheld,
        trial_shown=(view.trial or 1) > 1 or await _has_trials(request, view),
        run_label=await _run_label(request, view.assessment_id),
    )


async def _has_trials(request: Request, view) -> bool:
    """Whether the task's run asked for several trials (its page then names the trial)."""
    if not view.assessment_id:
        return False
    rec = await _orch(request).db.run(request.app.state.assessment_store.get, view.assessment_id)
    trials = (rec.request or {}).get("trials") if rec is not None else None
    return isinstance(trials, int) and trials > 1


async def _run_label(request: Request, run_id: str | None) -> str:
    if not run_id:
        return ""
    names = await run_names(_orch(request).db, request.app.state.assessment_store, [run_id])
    return names[run_id]


@router.post("/tasks/{task_id}/cancel")
async def cancel(task_id: str, request: Request) -> Response:
    check_form(request, await form_fields(request))
    orch = _orch(request)
    try:
        row = await orch.get(task_id)
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None
    await refuse_foreign_task(orch.db, request.app.state.assessment_store, caller(request), row)
    try:
        await orch.cancel(task_id, "cancelled from the dashboard")
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None
    return RedirectResponse(f"/ui/tasks/{task_id}", status_code=303)
