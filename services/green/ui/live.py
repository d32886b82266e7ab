"""GET /ui/tasks/{id}/stream: a task's commands and status changes as server-sent events.

Events: ``command`` (one per command, ``id`` = its seq, so a reconnecting browser resumes with
Last-Event-ID), ``status`` (a lifecycle transition), ``end`` (the task has ended; the stream
closes). The orchestrator's per-task broadcast (``Orchestrator.subscribe``) says when to look;
the commands themselves are read from the store, so nothing is lost between two wake-ups. That
broadcast is in-process: with several green replicas, a viewer must reach the replica running
the task (or this module must poll the database instead).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from fastapi.responses import StreamingResponse

from services.green.api.query_bounds import MAX_SEQ
from services.green.store.models import CommandPublic
from services.green.tasks.live_task import TaskEvent, TaskNotFound
from services.green.tasks.orchestrator import Orchestrator
from services.green.ui.auth import disclosure, require_api
from services.green.ui.templating import shown

router = APIRouter(prefix="/ui", include_in_schema=False, dependencies=[Depends(require_api)])
KEEPALIVE_S = 15.0
POLL_S = 1.0
"""How often an idle stream checks whether green is stopping (it then closes, so it never holds
up the shutdown; the browser reconnects to the restarted green)."""


def _shown(data: Any) -> Any:
    """The event's strings as the pages show them (:func:`services.green.ui.templating.shown`):
    the browser inserts them as text, which JSON would hand it with their controls intact."""
    if isinstance(data, dict):
        return {k: _shown(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_shown(v) for v in data]
    return shown(data)


def sse(event: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(_shown(data), default=str)}\n\n"


def _command(c: CommandPublic) -> str:
    return sse("command", c.model_dump(mode="json"), c.seq)


async def task_events(
    orch: Orchestrator, task_id: str, after: int, queue: asyncio.Queue[TaskEvent]
) -> AsyncIterator[str]:
    """The event stream of one task from command ``after`` on; ends after the task does.

    A command event carries the command (no database read); the store is read only to catch
    up: on connect, and if an event ever arrives out of sequence."""
    seq, last_status = after, (await orch.get(task_id)).status

    async def catch_up() -> list[str]:
        nonlocal seq
        out = []
        for row in await orch.db.run(orch.store.commands_after, task_id, seq):
            seq = row.seq
            out.append(_command(CommandPublic.model_validate(row, from_attributes=True)))
        return out

    yield "retry: 2000\n\n"
    try:
        for chunk in await catch_up():
            yield chunk
        idle = 0.0
        while True:
            try:
                async with asyncio.timeout(POLL_S):
                    event = await queue.get()
            except TimeoutError:
                if orch.stopping:
                    return
                idle += POLL_S
                if idle >= KEEPALIVE_S:
                    idle = 0.0
                    yield ": keep-alive\n\n"
                continue
            await asyncio.sleep(0)  # let the command's own reply go out first
            if event.command is not None and event.command.seq == seq + 1:
                seq = event.command.seq
                yield _command(event.command)
            elif event.command is not None or event.status is not last_status:
                for chunk in await catch_up():  # a gap, or a transition: commands come first
                    yield chunk
            if event.status is not last_status or event.status.terminal:
                last_status = event.status
                yield sse("status", {"status": event.status.value, "detail": event.message})
            if event.status.terminal:
                yield sse("end", {"status": event.status.value})
                return
    finally:
        orch.unsubscribe(task_id, queue)


@router.get("/tasks/{task_id}/stream")
async def stream(
    task_id: str, request: Request, after: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0
) -> StreamingResponse:
    orch: Orchestrator = request.app.state.orchestrator
    resume = request.headers.get("last-event-id", "").strip()
    # only ASCII digits: "²".isdigit() is true but int("²") fails; a browser sends back an id
    # green gave it, so anything else (or a number past the range) is ignored, not an error
    if resume.isascii() and resume.isdigit() and len(resume) <= len(str(MAX_SEQ)):
        after = max(after, min(int(resume), MAX_SEQ))
    try:
        row = await orch.get(task_id)
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None
    await disclosure(request).require_shown(row)  # its bug has an unfinished task: 403
    try:
        queue = await orch.subscribe(task_id)  # before the first read: no command falls in between
    except TaskNotFound:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no task {task_id}") from None
    return StreamingResponse(
        task_events(orch, task_id, after, queue),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
