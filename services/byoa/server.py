"""The A2A service around a foreign agent: it takes green's task, runs the agent in a worker
thread with a :class:`~services.byoa.green_shell.GreenShell`, submits when the agent is done, and
ends its A2A task with the agent's own reason and usage (an ``agent_report``, docs/protocol.md).

Green's ``tasks/cancel`` sets the shell's cancel flag: the agent's next command raises
:class:`~services.byoa.green_shell.TaskOver` (a thread cannot be stopped in the middle of its own
model call; the agent stops at its next command).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import AgentSkill, Message, Task, TaskState, TaskStatus
from fastapi import FastAPI
from pydantic import ValidationError

from services.byoa.green_shell import GreenShell, TaskOver
from services.shared.a2a import build_agent_card, message_parts, mount_a2a, new_protocol_message
from services.shared.a2a_numbers import data_part
from services.shared.logging import get_logger
from services.shared.protocol import AgentReport, TaskAssignment, parse_data

log = get_logger("services.byoa")

AgentRun = Callable[[str, GreenShell], str]
"""Runs the agent on green's task text with the shell (in a worker thread); returns the agent's
own words on how it ended. Raises :class:`TaskOver` when green stops it."""


class ForeignAgentExecutor(AgentExecutor):
    def __init__(self, run: AgentRun, name: str, submits: bool = True) -> None:
        self.run, self.name, self.submits = run, name, submits
        self._shells: dict[str, GreenShell] = {}
        self._jobs: set[asyncio.Task[None]] = set()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        payload = message_parts(context.message)
        try:
            task = parse_data(payload.data or {})
            if not isinstance(task, TaskAssignment):
                raise ValueError("not a task")
        except (ValidationError, ValueError) as exc:
            why = f"send a task from green (rca_task or swe_task data part): {exc}"[:300]
            await event_queue.enqueue_event(
                new_protocol_message(why, {"kind": "error", "message": why})
            )
            return
        await event_queue.enqueue_event(
            Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            )
        )
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.start_work()
        shell = GreenShell(task, asyncio.get_running_loop())
        self._shells[task.task_id] = shell
        job = asyncio.create_task(self._work(payload.text, shell, updater))
        self._jobs.add(job)
        job.add_done_callback(self._jobs.discard)

    async def _work(self, text: str, shell: GreenShell, updater: TaskUpdater) -> None:
        accepted = False
        try:
            words = await asyncio.to_thread(self.run, text, shell)
            if self.submits:
                reply = await asyncio.to_thread(shell.submit)
                accepted = reply.accepted
                status = "submitted" if accepted else "refused"
                why = "; ".join(reply.errors)
                reason = words if accepted else f"{words}; green refused: {why}"
            else:  # the agent submitted itself (or not): its words say how it ended
                accepted, status, reason = True, "finished", words
        except TaskOver as exc:
            status, reason = "ended", str(exc)
        except Exception as exc:  # the foreign agent crashed: its failure, said in one line
            status, reason = "error", f"{type(exc).__name__}: {exc}"
            log.warning("agent.failed", error=reason[:500])
        finally:
            self._shells.pop(shell.task.task_id, None)
            await shell.aclose()
        log.info("agent.finished", status=status, reason=reason[:300], **shell.usage.model_dump())
        if shell.cancelled.is_set():
            return  # the cancel already answered green
        message = report(updater, status, reason, shell)
        with contextlib.suppress(RuntimeError):  # ended meanwhile
            await (updater.complete(message) if accepted else updater.failed(message))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        shell = self._shells.get(context.context_id or "")
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        if shell is not None:
            shell.cancel()
            await updater.cancel(report(updater, "cancelled", "cancelled by green", shell))
        else:
            await updater.cancel()


def report(updater: TaskUpdater, status: str, reason: str, shell: GreenShell) -> Message:
    data = AgentReport(status=status, reason=reason, usage=shell.usage)
    return updater.new_agent_message(
        [new_text_part(f"{status}: {data.reason}"), data_part(data.model_dump())]
    )


def create_app(run: AgentRun, *, name: str, url: str, submits: bool = True) -> FastAPI:
    """An A2A purple around ``run`` (card at /.well-known/agent-card.json, JSON-RPC at /).
    ``submits``: ask green to judge once ``run`` returns (False: the agent submits itself, as an
    MCP agent does with its ``submit`` tool)."""
    app = FastAPI(title=f"{name} (purple adapter)")

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"status": "ok", "agent": name}

    card = build_agent_card(
        name=name,
        description=f"{name}, run as a purple through services/byoa (docs/own-agent.md).",
        url=url,
        version="0.1.0",
        skills=[
            AgentSkill(
                id="shell_agent",
                name="Shell agent",
                description="Works on green's task by running shell commands.",
                tags=["byoa"],
            )
        ],
    )
    mount_a2a(app, ForeignAgentExecutor(run, name, submits), card)
    return app
