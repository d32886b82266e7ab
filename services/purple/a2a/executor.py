"""Purple's executor: acknowledge green's task at once, work on it in the background.

The A2A task goes ``working`` immediately (green does not block on it), then ``completed`` with
the accepted ``loc.json`` as an artifact, or ``failed`` with the reason. Each task's record
(:mod:`services.purple.task_index`) is written when it is taken, when a policy opens its
trajectory, and when it ends; its commands are in its trajectory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from a2a.helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Task, TaskState, TaskStatus
from pydantic import ValidationError

from services.purple.a2a.green_env import GreenEnvironment, usage_of
from services.purple.commands import CommandLog
from services.purple.config import PurpleSettings
from services.purple.protocols import Policy, RunResult, RunStats, TaskContext
from services.purple.task_index import TaskIndex, TaskRecord, utcnow
from services.purple.trajectory import Trajectory
from services.shared.a2a import A2APeer, Payload, message_parts, new_protocol_message
from services.shared.a2a_numbers import data_part
from services.shared.aio import cancel_and_wait
from services.shared.logging import get_logger, task_log_context
from services.shared.memory import Trimmer
from services.shared.protocol import RCA_PATHS, AgentReport, TaskAssignment, parse_data
from services.shared.telemetry import Tracing

log = get_logger("services.purple.a2a")

_TOKEN_RE = re.compile(r"token:\s*`?([A-Za-z0-9_\-]{8,})`?")


class BadTask(ValueError):
    pass


TASK_KINDS = ("rca_task", "swe_task", "poc_task", "fix_task")


def assignment_of(payload: Payload) -> TaskAssignment | None:
    """The structured task (rca_task, swe_task, poc_task, fix_task) of a message, or None for a plain-text task."""
    if not payload.data or payload.data.get("kind") not in TASK_KINDS:
        return None
    try:
        return parse_data(payload.data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise BadTask(f"invalid {payload.data['kind']} data: {exc.errors()[0]['msg']}") from exc


@dataclass(frozen=True)
class Incoming:
    """A task as purple received it: structured (``assignment``) or plain text."""

    green_url: str
    token: str | None
    description: str
    assignment: TaskAssignment | None

    @property
    def kind(self) -> str:
        return self.assignment.kind if self.assignment else "rca_task"

    def context(self, task_id: str, env: GreenEnvironment, commands: CommandLog) -> TaskContext:
        a = self.assignment
        assert commands.usage is not None
        return TaskContext(
            usage=commands.usage,
            commands=commands,
            task_id=task_id,
            description=self.description,
            env=env,
            paths=a.paths if a else RCA_PATHS,
            max_commands=a.limits.max_steps if a else None,
            deadline=a.limits.deadline if a else None,
            command_timeout_s=a.limits.command_timeout_s if a else None,
            offers=tuple(a.offers) if a else (),
        )


def read_task(payload: Payload, default_green: str | None) -> Incoming:
    """A structured task, or a plain-text one (green from PURPLE_GREEN_URL, token from the text)."""
    if (task := assignment_of(payload)) is not None:
        return Incoming(task.green_url, task.token, payload.text, task)
    if not payload.text.strip():
        raise BadTask("empty task")
    if not default_green:
        raise BadTask("a plain-text task needs PURPLE_GREEN_URL (no green URL in the message)")
    m = _TOKEN_RE.search(payload.text)
    return Incoming(default_green, m.group(1) if m else None, payload.text, None)


class PurpleExecutor(AgentExecutor):
    def __init__(
        self,
        settings: PurpleSettings,
        index: TaskIndex,
        make_policy: Callable[[str], Policy],
        tracing: Tracing | None = None,
    ) -> None:
        self.settings = settings
        self.index = index
        self.make_policy = make_policy
        self.tracing = tracing or Tracing.off()
        """Opt-in traces: each task's ``invoke_agent`` span, in the trace of green's task."""
        self._slots = asyncio.Semaphore(settings.max_concurrent_tasks)
        self._jobs: dict[str, asyncio.Task[None]] = {}
        self._usage: dict[str, RunStats] = {}
        """Each task's usage as it accrues (read when a task is cancelled)."""
        self._stop_reason: str | None = None
        self._trimmer = Trimmer()

    async def shutdown(self) -> None:
        """Stop every task in progress (each records why) before the process exits."""
        self._stop_reason = "purple shut down"
        await cancel_and_wait(*self._jobs.values())

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        payload = message_parts(context.message)
        task_id = context.context_id or context.task_id or ""
        try:
            incoming = read_task(payload, self.settings.green_url)
        except BadTask as exc:
            await event_queue.enqueue_event(
                new_protocol_message(
                    f"Cannot take this task: {exc}",
                    {"kind": "error", "message": str(exc)},
                    context_id=context.context_id,
                )
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
        policy = self.make_policy(incoming.kind)
        record = TaskRecord(
            id=task_id,
            a2a_task_id=context.task_id,
            green_url=incoming.green_url,
            policy=policy.name,
        )
        marker = self.index.start(record)
        log_key = payload.metadata.get("log_key") or f"task_{task_id}"
        headers = context.call_context.state.get("headers") or {}  # green's traceparent
        job = asyncio.create_task(
            self._work(record, marker, log_key, incoming, policy, updater, headers)
        )
        self._jobs[task_id] = job
        job.add_done_callback(lambda _: self._jobs.pop(task_id, None))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Green ended the task (``tasks/cancel``): stop the loop and its in-flight LLM call at
        once, and answer with the usage so far."""
        task_id = context.context_id or ""
        job = self._jobs.get(task_id)
        if job:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await cancel_and_wait(job)
        updater = TaskUpdater(event_queue, context.task_id or "", task_id)
        await updater.cancel(
            _report(updater, "cancelled", CANCELLED, self._usage.get(task_id) or RunStats())
        )

    async def _work(
        self,
        record: TaskRecord,
        marker: str,
        log_key: str,
        incoming: Incoming,
        policy: Policy,
        updater: TaskUpdater,
        headers: dict[str, str],
    ) -> None:
        task_id = record.id
        model = getattr(getattr(policy, "llm", None), "name", None)
        with (
            task_log_context(task_id, log_key),
            self.tracing.invoke_agent(policy.name, task_id, headers, model) as span,
        ):
            green = A2APeer(incoming.green_url, timeout=self.settings.green_timeout_s)

            usage = self._usage[task_id] = RunStats()
            env = GreenEnvironment(green, task_id, incoming.token, usage=usage)

            def opened(traj: Trajectory) -> None:
                try:
                    self.index.opened(record, traj)
                except OSError as exc:  # purple's own record; the run goes on
                    log.error("task.record_failed", error=str(exc))

            ctx = incoming.context(task_id, env, CommandLog(usage, on_trajectory=opened))
            log.info("task.accepted", policy=policy.name, green_url=incoming.green_url)
            try:
                async with self._slots:
                    result = await policy.run(ctx)
            except asyncio.CancelledError:
                reason = self._stop_reason or CANCELLED
                self._end(record, marker, "cancelled", reason, **_counts(usage))
                log.info("task.cancelled", reason=reason, tokens_in=usage.tokens_in)
                span.ended("cancelled", reason)
                with contextlib.suppress(Exception):  # the queue may be gone at shutdown
                    await updater.cancel(_report(updater, "cancelled", reason, usage))
                raise
            except Exception as exc:
                log.exception("task.crashed")
                span.ended("error", type(exc).__name__, error=True)
                self._end(record, marker, "failed", repr(exc), command_count=usage.commands)
                await updater.failed(_report(updater, "error", f"purple failed: {exc}", usage))
                return
            finally:
                self._usage.pop(task_id, None)
                span.usage(usage.tokens_in, usage.tokens_out)
                await green.aclose()
                await self._trimmer.maybe_trim()  # freed memory back to the system, now and then
            span.ended(result.status, result.reason)
            await self._finish(record, marker, result, usage, updater)

    def _end(self, record: TaskRecord, marker: str, status: str, reason: str, **fields) -> None:
        """The task's end in its record (a failure to write it is logged: green keeps its own)."""
        update = {"status": status, "reason": reason, "finished_at": utcnow(), **fields}
        for name, value in update.items():
            setattr(record, name, value)
        try:
            self.index.end(record, marker)
        except OSError as exc:
            log.error("task.record_failed", error=str(exc))

    async def _finish(
        self,
        record: TaskRecord,
        marker: str,
        result: RunResult,
        usage: RunStats,
        updater: TaskUpdater,
    ) -> None:
        status = "submitted" if result.status == "submitted" else "failed"
        self._end(
            record,
            marker,
            status,
            result.reason,
            step_count=result.stats.steps,
            command_count=usage.commands,
            tokens_in=result.stats.tokens_in,
            tokens_out=result.stats.tokens_out,
            cost=result.stats.cost,
            submission=result.submission.model_dump() if result.submission else None,
            trajectory_path=result.trajectory_path,
        )
        log.info(
            "task.finished",
            status=result.status,
            reason=result.reason,
            steps=result.stats.steps,
            tokens_in=result.stats.tokens_in,
            tokens_out=result.stats.tokens_out,
            cost=result.stats.cost,
        )
        summary = (
            f"{result.policy}: {result.status} ({result.reason}) after {result.stats.steps} "
            f"steps (LLM turns), {result.stats.commands} commands"
        )
        await updater.add_artifact(
            [
                new_text_part(summary),
                data_part(json.loads(result.model_dump_json(exclude={"command_history"}))),
            ],
            name="submission",
        )
        report = _report(updater, result.status, result.reason, result.stats, summary)
        if result.status == "submitted":
            await updater.complete(report)
        else:
            await updater.failed(report)


CANCELLED = "cancelled by green (tasks/cancel)"


def _counts(usage: RunStats) -> dict:
    return {
        "command_count": usage.commands,
        "tokens_in": usage.tokens_in,
        "tokens_out": usage.tokens_out,
        "cost": usage.cost,
    }


def _report(
    updater: TaskUpdater, status: str, reason: str, usage: RunStats, text: str | None = None
) -> Message:
    """The final status message: how the run ended in purple's words (text), and the same with
    the usage as an :class:`AgentReport` data part (green records both)."""
    wire = usage_of(usage)
    data = AgentReport(status=status, reason=reason, usage=wire or AgentReport().usage)
    return updater.new_agent_message(
        [new_text_part(text or f"{status}: {reason}"), data_part(data.model_dump())]
    )
