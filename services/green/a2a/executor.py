"""Routes every message that reaches green's A2A endpoint.

- inside a running task's context: ``execute``/``submit`` from purple -> one reply Message;
- ``Task ID: arvo:<n>`` or an AgentBeats assessment request (admitted by :mod:`.gate`) -> an A2A
  Task that streams a status update per task event and ends with a ``Result`` artifact (JSON
  scores; the ground truth only for the operator, see :mod:`services.green.edge.disclosure`);
- anything else -> one Message that says what green understands.
"""

from __future__ import annotations

import json

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Task, TaskState, TaskStatus

from services.green.a2a.gate import INTAKE, VERDICT, caller_of
from services.green.a2a.requests import Assessment, ProtocolRequest, StartTask, Unknown
from services.green.assessments.runner import AssessmentRequest, AssessmentRunner, UnknownTasks
from services.green.edge.auth import Caller
from services.green.edge.disclosure import Disclosure
from services.green.kinds.errors import UnknownTask
from services.green.tasks.agent_plane import Refused, answer
from services.green.tasks.orchestrator import Orchestrator
from services.shared.a2a import new_protocol_message
from services.shared.a2a_numbers import data_part
from services.shared.logging import get_logger
from services.shared.protocol import (
    ErrorReply,
    Execute,
    RunPoc,
    SubmitResult,
    result_text,
    submit_result_text,
)

log = get_logger("services.green.a2a")


class GreenExecutor(AgentExecutor):
    def __init__(self, orchestrator: Orchestrator, assessments: AssessmentRunner) -> None:
        self.orchestrator = orchestrator
        self.assessments = assessments

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        state = context.call_context.state
        verdict = state.get(VERDICT)  # classified (and its caller admitted) by the gate
        match verdict:
            case ProtocolRequest() as req:
                await self._serve(context, event_queue, req)
            case StartTask() | Assessment():
                caller = caller_of(context.call_context)
                await self._assess(context, event_queue, state[INTAKE], caller)
            case Unknown(why=why):
                await self._refuse(context, event_queue, why)
            case _:  # only reachable if the executor is mounted without the gate
                await self._refuse(context, event_queue, "request not classified")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The framework cancels execute(); the runner's own cancellation ends the green tasks.
        if context.task_id:
            updater = TaskUpdater(event_queue, context.task_id, context.context_id or "")
            await updater.cancel()

    async def _reply(
        self, context: RequestContext, queue: EventQueue, text: str, data: dict
    ) -> None:
        await queue.enqueue_event(new_protocol_message(text, data, context_id=context.context_id))

    async def _refuse(self, context: RequestContext, queue: EventQueue, why: str) -> None:
        await self._reply(context, queue, f"Refused: {why}", ErrorReply(message=why).model_dump())

    async def _serve(
        self, context: RequestContext, queue: EventQueue, req: ProtocolRequest
    ) -> None:
        await queue.enqueue_event(await self.answer(context.context_id, req))

    async def answer(self, context_id: str | None, req: ProtocolRequest) -> Message:
        """The reply to purple's execute/submit/run_poc in the task ``context_id``: the
        command's (or the PoC run's) :class:`CommandResult` (or the submission's verdict, or a
        refusal) as one Message.
        The gate calls it directly for ``message/send``; a streamed request comes through
        :meth:`execute`."""
        task_id = context_id or ""
        live = self.orchestrator.live
        if isinstance(req.request, Execute):
            request = live.execute(
                task_id, req.token, req.request.command, req.request.timeout, req.request.usage
            )
        elif isinstance(req.request, RunPoc):
            request = live.run_poc(task_id, req.token, req.request.usage)
        else:
            request = live.submit(task_id, req.token, req.request)
        reply = await answer(live, task_id, request)
        if isinstance(reply, Refused):
            return new_protocol_message(
                f"Refused: {reply.why}",
                ErrorReply(message=reply.why).model_dump(),
                context_id=context_id,
            )
        text = submit_result_text(reply) if isinstance(reply, SubmitResult) else result_text(reply)
        return new_protocol_message(text, reply.model_dump(), context_id=context_id)

    async def _assess(
        self,
        context: RequestContext,
        queue: EventQueue,
        request: AssessmentRequest,
        caller: Caller,
    ) -> None:
        task = Task(
            id=context.task_id,
            context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
        )
        await queue.enqueue_event(task)
        updater = TaskUpdater(queue, context.task_id or "", context.context_id or "")
        await updater.start_work()

        async def progress(text: str) -> None:
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, updater.new_agent_message([new_text_part(text)])
            )

        try:
            result = await self.assessments.run(request, progress)
        except (UnknownTask, ValueError) as exc:  # the request itself is wrong
            single = isinstance(exc, UnknownTask) and not isinstance(exc, UnknownTasks)
            why = f"unknown task {exc}" if single else str(exc)  # UnknownTasks names them all
            await updater.failed(updater.new_agent_message([new_text_part(why)]))
            return
        shown = json.loads(result.model_dump_json())
        shown.update(result.flat())  # flat leaderboard keys (additive; docs/leaderboard.md)
        orch = self.orchestrator
        shown["tasks"] = await Disclosure(orch.store, orch.db, caller).outcomes(shown["tasks"])
        await updater.add_artifact(
            [new_text_part(result.summary()), data_part(shown)], name="Result"
        )
        await updater.complete()
