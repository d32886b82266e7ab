"""The task lifecycle: queued -> preparing -> running -> evaluating -> completed | failed | cancelled.

One :class:`Orchestrator` per green process. A task's id is a fresh UUID and is also the A2A
context id of every message of that task. Intake writes a ``queued`` row; the replica's
dispatcher (:mod:`services.green.replicas`) claims queued rows while it has free slots, on this
replica or any other sharing the database, and hands them to :meth:`Orchestrator.adopt`. Each
task gets its own container (which holds its workspace), token, log file and counters. The store
is written at every transition, so ``GET /tasks/{id}`` and a SQLite shell show the truth
mid-task. Cleanup (the container) runs on every exit path.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from services.green.config import GreenSettings
from services.green.endings import Endings
from services.green.intake_limits import allowed_purple
from services.green.kinds.base import TaskKind
from services.green.kinds.errors import AssetError, UnknownTask
from services.green.live_task import (
    GreenFault,
    LiveTask,
    LiveTasks,
    TaskEvent,
    TaskLost,
    TaskNotFound,
)
from services.green.provenance import provenance_of
from services.green.purple_link import PurpleLink, PurpleUnreachable
from services.green.store.crud import TaskStore
from services.green.store.errors import STORAGE_ERRORS, brief
from services.green.store.models import FailureKind, Task, TaskStatus, utcnow
from services.green.store.queue import HELD, TaskQueue
from services.green.watch import RemoteWatch, subscribe, unsubscribe
from services.sandbox.base import AgentFault, SandboxError, SandboxProvider
from services.sandbox.janitor import Janitor
from services.shared.aio import cancel_and_wait, through_cancels
from services.shared.logging import get_logger, router, task_log_context
from services.shared.outcome import TaskOutcome
from services.shared.protocol import TaskLimits
from services.shared.task_ref import TaskRef

log = get_logger("services.green.orchestrator")


@dataclass
class TaskOptions:
    """What a caller may choose for a task (None: green's settings)."""

    purple_url: str | None = None
    max_steps: int | None = None
    task_timeout_s: float | None = None
    command_timeout_s: float | None = None
    assessment_id: str | None = None
    trial: int = 1
    """Which repeated attempt of the task this is (1..K)."""


class Orchestrator:
    """Runs every task of this process from intake to cleanup."""

    def __init__(
        self,
        settings: GreenSettings,
        store: TaskStore,
        sandboxes: SandboxProvider,
        kinds: Mapping[str, TaskKind],
        purple_link: Callable[[str], PurpleLink] | None = None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.sandboxes = sandboxes
        self.kinds = dict(kinds)
        self._purple_link = purple_link or self._default_link
        self.live = LiveTasks(settings, store)
        """The tasks this process is working on; purple's execute/submit are served there."""
        self.endings = Endings(store, settings.instance_name)
        """Ends not yet written (the database failed): retried until they land."""
        self._stopping = False
        self.task_end_hooks: list[Callable[[str], None]] = []
        """Called (in a thread) with a task's image after it ended (e.g. the disk budget)."""
        self.queue = TaskQueue(store.engine)
        self.wakeup = asyncio.Event()
        """Set when a task was queued or a slot freed: the dispatcher claims at once."""
        self.remote = RemoteWatch(store)
        """Listeners of tasks this replica does not run (queued, or run by another replica)."""
        # Docker and file work is blocking; give it threads enough for every running task.
        self._pool = ThreadPoolExecutor(
            max_workers=settings.max_concurrent_tasks * 2 + 4, thread_name_prefix="green-io"
        )
        self.janitor = Janitor(
            sandboxes, lambda task_id: task_id in self.live, settings.cleanup_retry_s
        )

    def _default_link(self, url: str) -> PurpleLink:
        s = self.settings
        return PurpleLink(
            url, lost_after_s=s.purple_lost_after_s, start_retry_s=s.purple_start_retry_s
        )

    # ---- process lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        """Clean up after an earlier process: reap its containers, fail its unfinished tasks."""
        reaped = await self.sandboxes.reap()
        failed = self.store.fail_unfinished("interrupted by restart", self.settings.instance_name)
        log.info("green.started", reaped_containers=reaped, failed_unfinished=failed)

    def begin_shutdown(self) -> None:
        """Called as soon as the process is asked to stop (before the server drains its
        connections): from now on, a task that ends without an accepted submission ended because
        green stopped, an infra failure, not the agent's (its requests are being cut off)."""
        self._stopping = True

    @property
    def stopping(self) -> bool:
        """The process is shutting down (listeners such as open dashboard streams should end)."""
        return self._stopping

    async def shutdown(self) -> None:
        """Stop every task (each runner's cleanup removes its container), then the thread pool."""
        self._stopping = True
        live = list(self.live)
        await cancel_and_wait(*(t.runner for t in live if t.runner))
        await self.endings.close(wait_s=min(self.settings.lease_s, 10.0))
        await self.janitor.close()
        self._pool.shutdown(wait=True, cancel_futures=True)
        log.info("green.stopped", stopped_tasks=[t.id for t in live])

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    # ---- intake ------------------------------------------------------------------------

    def kind(self, name: str) -> TaskKind:
        if name not in self.kinds:
            raise ValueError(f"unknown task kind {name!r} (known: {', '.join(self.kinds)})")
        return self.kinds[name]

    async def create_task(
        self, ref: TaskRef | str, options: TaskOptions | None = None, *, record: bool = True
    ) -> Task:
        """Validate and record as queued (any replica's dispatcher may claim it; ``record=False``:
        :meth:`record` does). Raises ValueError for a malformed reference or a kind this green
        does not serve, UnknownTask for an id the source lacks."""
        opts = options or TaskOptions()
        s = self.settings
        purple_url = allowed_purple(self.settings, opts.purple_url)
        parsed = TaskRef.parse(ref)
        task_kind = self.kind(parsed.kind)
        ref = TaskRef(parsed.kind, task_kind.canonical(parsed.id))
        try:  # cheap existence check; also warms the cache for preparation
            await self._io(task_kind.check, ref.id)
        except UnknownTask:
            raise
        except AssetError as exc:  # the source is slow or broken: let preparation retry and report
            log.warning("intake.asset_check_failed", task_ref=str(ref), error=str(exc))
        task = Task(
            id=str(uuid.uuid4()),
            kind=task_kind.name,
            ref_id=ref.id,
            purple_url=purple_url,
            max_steps=opts.max_steps or s.max_steps,
            task_timeout_s=opts.task_timeout_s or s.task_timeout_s,
            command_timeout_s=min(
                opts.command_timeout_s or s.command_timeout_s, s.command_timeout_s
            ),
            assessment_id=opts.assessment_id,
            trial=opts.trial,
            owner=s.instance_name,
        )
        if record:
            self.record(task)
        return task

    def record(self, *tasks: Task) -> None:
        """Queue these tasks, all or none (one transaction: a failing database queues none)."""
        self.store.add_all(tasks)
        for task in tasks:
            log_key = f"{task.kind}_{task.ref_id}"
            with task_log_context(task.id, log_key, task_ref=str(task.ref)):
                log.info("task.queued", purple_url=task.purple_url, max_steps=task.max_steps)
            self._close_log(log_key)
        self.wakeup.set()

    def adopt(self, task: Task) -> LiveTask:
        """Run a task this replica claimed from the queue (a fresh token: only we know it)."""
        live = LiveTask(
            id=task.id,
            kind=self.kind(task.kind),
            ref=task.ref,
            token=secrets.token_urlsafe(24),
            purple_url=task.purple_url,
            max_steps=task.max_steps,
            task_timeout_s=task.task_timeout_s,
            command_timeout_s=task.command_timeout_s,
            log_key=f"{task.kind}_{task.ref_id}",
        )
        live.subscribers.extend(self.remote.hand_over(task.id))
        self.live.add(live)
        with live.log_context():
            log.info("task.claimed", instance=self.settings.instance_name)
            live.runner = asyncio.create_task(self._run(live), name=f"task-{task.id}")
        return live

    def get(self, task_id: str) -> Task:
        task = self.store.get(task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    def subscribe(self, task_id: str) -> asyncio.Queue[TaskEvent]:
        """Events of a task, whichever replica runs it (see :func:`watch.subscribe`)."""
        return subscribe(self.live, self.remote, self.get, task_id)

    def unsubscribe(self, task_id: str, q: asyncio.Queue[TaskEvent]) -> None:
        unsubscribe(self.live, self.remote, task_id, q)

    async def wait(self, task_id: str) -> Task:
        """The task once it has ended, whichever replica runs it."""
        while True:
            live = self.live.get(task_id)
            if live is not None and live.runner is not None:
                await asyncio.shield(live.runner)
            try:
                task = self.get(task_id)
            except STORAGE_ERRORS:  # the database is away: its end is read once it is back
                task = None
            if task is not None and task.status.terminal:
                return task
            await asyncio.sleep(min(self.settings.queue_poll_s, 0.5))

    async def cancel(self, task_id: str, reason: str = "cancelled by request") -> Task:
        """Cancel a task: a queued one at once, one of ours at once (returned ended), one of
        another replica through its cancel flag (returned as it is: its owner acts within
        GREEN_QUEUE_POLL_S)."""
        task = self.get(task_id)
        live = self.live.get(task_id)
        if task.status.terminal:
            return task
        if task_id in self.endings:  # it has ended here; its end is being written: retry now
            self.endings.nudge(task_id)
            return task
        if live is None or live.runner is None:
            if self.queue.cancel_queued(task_id, "cancelled"):
                self.store.update(task_id, error=reason)
            elif task.owner == self.settings.instance_name and task.status in HELD:
                if self.endings.end_orphan(task_id, reason):
                    self.janitor.sweep_soon()
            else:
                self.queue.request_cancel(task_id)
            return self.get(task_id)
        live.cancel_reason = reason
        await cancel_and_wait(live.runner)  # cancelled again if a first cancel is swallowed
        return self.get(task_id)

    # ---- the lifecycle -----------------------------------------------------------------

    async def _run(self, live: LiveTask) -> None:
        """The whole life of one task. The terminal status is written only after cleanup, so a
        client that sees ``completed`` also sees the container gone."""
        outcome = live.outcome(
            TaskStatus.failed, "harness_error", "green stopped unexpectedly", FailureKind.infra
        )
        engine_failed = False
        try:
            await self._prepare(live)
            end_reason = await self._serve(live)
            outcome = await self._evaluate(live, end_reason)
        except asyncio.CancelledError:  # a cancel request (a shutdown is recorded below)
            outcome = live.outcome(
                TaskStatus.cancelled, "cancelled", live.cancel_reason or "cancelled"
            )
        except TaskLost:
            pass  # another replica ended it: nothing of ours is written (live.lost)
        except GreenFault as exc:  # green failed while serving the agent: not the agent's
            outcome = live.outcome(TaskStatus.failed, exc.end_reason, str(exc), FailureKind.infra)
        except STORAGE_ERRORS as exc:  # the database failed: the detail to the log only
            with live.log_context():
                log.error("task.storage_failed", status=live.status.value, error=str(exc))
            outcome = live.outcome(TaskStatus.failed, "storage", brief(exc), FailureKind.infra)
        except PurpleUnreachable as exc:
            outcome = live.outcome(TaskStatus.failed, exc.reason, str(exc), FailureKind.agent)
        except AgentFault as exc:  # the agent's commands ended the container; not in preparation
            kind = FailureKind.agent if live.status is TaskStatus.running else FailureKind.infra
            outcome = live.outcome(TaskStatus.failed, exc.reason, str(exc), kind)
        except AssetError as exc:
            outcome = live.outcome(TaskStatus.failed, "assets", str(exc), FailureKind.infra)
        except SandboxError as exc:
            engine_failed = True  # it may have left a container behind: sweep once forgotten
            outcome = live.outcome(TaskStatus.failed, "sandbox", str(exc), FailureKind.infra)
        except Exception as exc:  # a harness bug or a Docker failure: recorded, never swallowed
            with live.log_context():
                log.exception("task.crashed")
            error = f"{type(exc).__name__}: {exc}"
            outcome = live.outcome(TaskStatus.failed, "harness_error", error, FailureKind.infra)
        finally:
            # Cleanup and the final record must happen even if this runner is cancelled again
            # (e.g. a cancel request racing with shutdown): wait for them through any cancel.
            await through_cancels(self._cleanup(live))
            if self._stopping and outcome.status is not TaskStatus.completed:
                outcome = live.outcome(
                    TaskStatus.failed, "interrupted", "green shut down", FailureKind.infra
                )
            try:
                if not live.lost:  # else another replica ended it (its lease had expired)
                    await through_cancels(self._finish(live, outcome))
            finally:  # written or not (then retried by self.endings): the slot is free
                self._forget(live)
                self.wakeup.set()
                if engine_failed:
                    self.janitor.sweep_soon()
                if live.plan is not None:
                    for hook in self.task_end_hooks:
                        with contextlib.suppress(RuntimeError):  # the pool is shut down
                            self._pool.submit(hook, live.plan.image)

    def _transition(self, live: LiveTask, status: TaskStatus, message: str, **fields: Any) -> None:
        """Record a step of the lifecycle (not its end: :mod:`.endings`), only while this replica
        still holds the task: one that was taken over (its lease ran out) raises TaskLost."""
        if not self.store.update_held(
            live.id, self.settings.instance_name, status=status, **fields
        ):
            live.lost = True
            with live.log_context():
                log.warning(
                    "task.lease_lost", detail=f"not {status.value}: another replica ended it"
                )
            raise TaskLost(live.id)
        live.status = status
        with live.log_context():
            log.info(f"task.{status.value}", detail=message)
        live.publish(TaskEvent(live.id, status, message))

    def _write(self, live: LiveTask, **fields: Any) -> None:
        if not self.store.update_held(live.id, self.settings.instance_name, **fields):
            live.lost = True
            raise TaskLost(live.id)

    def _progress(self, live: LiveTask, line: str) -> None:
        """A line of the sandbox provider's progress (an image pull): logged, and an event."""
        with live.log_context():
            log.info("sandbox.progress", detail=line)
        live.publish(TaskEvent(live.id, live.status, line))

    async def _finish(self, live: LiveTask, outcome: TaskOutcome) -> None:
        fields: dict[str, Any] = {}
        if outcome.scores is not None:
            fields["scores"] = outcome.scores
        elif live.plan:  # no valid submission: zeros, explained
            fields["scores"] = await live.plan.score(None)
        if outcome.status is TaskStatus.completed:
            fields["submission"] = live.submission
        fields.update(live.report_fields())  # the agent's own words and final usage
        await self.endings.end(live, outcome, {"finished_at": utcnow(), **fields})

    async def _prepare(self, live: LiveTask) -> None:
        with live.log_context():
            self._transition(live, TaskStatus.preparing, "fetching assets")
            live.plan = plan = await self._io(live.kind.prepare, live.ref.id)
            self._write(live, workspace_dir=plan.paths.workspace, ground_truth=plan.ground_truth())
            spec = live.sandbox_spec(self.settings)
            # Shielded: a cancel must not lose a container the thread is still creating.
            live.creating = asyncio.ensure_future(
                self.sandboxes.create(spec, lambda line: self._progress(live, line))
            )
            live.sandbox = await asyncio.shield(live.creating)
            self._write(live, container_name=live.sandbox.name)
            log.info(
                "sandbox.created",
                container=live.sandbox.name,
                image=spec.image,
                engine=live.sandbox.engine,
            )
            await plan.populate(live.sandbox)
            prov = await provenance_of(live, self.settings, self.get(live.id), self._io)
            self._write(live, provenance=prov)

    async def _serve(self, live: LiveTask) -> str:
        """Hand the task to purple, then wait for a submission or an ending. Returns why it ended."""
        with live.log_context():
            now = time.monotonic()
            live.deadline = now + live.task_timeout_s
            live.last_activity = now
            deadline_at = datetime.now(UTC) + timedelta(seconds=live.task_timeout_s)
            self._transition(live, TaskStatus.running, "sent to purple", started_at=utcnow())
            assert live.plan is not None
            assignment = live.kind.assignment(
                task_id=live.id,
                token=live.token,
                green_url=self.settings.reachable_url(),
                paths=live.plan.paths,
                limits=TaskLimits(
                    max_steps=live.max_steps,
                    command_timeout_s=live.command_timeout_s,
                    deadline=deadline_at,
                ),
            )
            link = self._purple_link(live.purple_url)
            try:
                await link.start(assignment, live.plan.describe(assignment))
                return await self._wait_for_end(live, link)
            finally:  # whatever ended the task, purple's task ends too (and says why)
                # A reply told purple the task is over: let it end by itself (and say so) before
                # a cancel could overtake that reply.
                grace = 3.0 if live.told_purple_it_ended else 0.0
                live.agent_report = await through_cancels(link.stop(grace))
                await link.aclose()

    async def _wait_for_end(self, live: LiveTask, link: PurpleLink) -> str:
        poll = self.settings.purple_poll_s
        while True:
            now = time.monotonic()
            idle_left = live.last_activity + self.settings.idle_timeout_s - now
            deadline_left = live.deadline - now
            if deadline_left <= 0:
                return "deadline"
            if idle_left <= 0:
                return "idle_timeout"
            try:
                async with asyncio.timeout(min(poll, idle_left, deadline_left)):
                    await live.ended.wait()
            except TimeoutError:
                pass
            else:
                if live.agent_fault:
                    raise live.agent_fault
                if live.green_fault:
                    raise live.green_fault
                if live.sandbox_error:
                    raise SandboxError(live.sandbox_error)
                return "submitted"
            if live.sandbox is not None and live.sandbox.lost:  # e.g. its engine went down
                raise SandboxError(live.sandbox.lost)
            ended = await link.ended()
            if ended and not live.ended.is_set():
                live.end_detail = getattr(link, "lost_reason", None)
                return f"purple_{ended}"

    async def _evaluate(self, live: LiveTask, end_reason: str) -> TaskOutcome:
        with live.log_context():
            self._transition(live, TaskStatus.evaluating, f"ended: {end_reason}")
            plan, sandbox = live.plan, live.sandbox
            assert plan is not None and sandbox is not None
            submission = live.submission
            errors: list[str] = []
            if submission is None:  # no accepted submit: judge whatever the agent left
                submission, errors = await plan.read_submission(sandbox)
            score = await plan.score(submission)
            if submission is None:
                why = "; ".join(errors) or "nothing was submitted"
                lead = f"{live.end_detail}; " if live.end_detail else ""
                return live.outcome(
                    TaskStatus.failed,
                    end_reason,
                    f"{lead}no valid submission ({end_reason}): {why}",
                    FailureKind.agent,
                    score,
                )
            live.submission = submission
            return live.outcome(TaskStatus.completed, end_reason, scores=score)

    async def _cleanup(self, live: LiveTask) -> None:
        with live.log_context():
            if live.sandbox is None and live.creating is not None:
                # cancelled while the container was being created: wait for it (if it was
                # never created, its error is already the task's outcome)
                with contextlib.suppress(Exception):
                    live.sandbox = await live.creating
            if live.sandbox is not None and live.sandbox.lost:  # its engine is down: the
                self.janitor.remove_later(live.sandbox)  # removal waits for it, the task not
            elif live.sandbox is not None:
                try:
                    await live.sandbox.remove()
                    log.info("sandbox.removed", container=live.sandbox.name)
                except Exception as exc:  # the engine is unreachable: retried in the background
                    log.warning(
                        "sandbox.remove_failed", container=live.sandbox.name, error=str(exc)
                    )
                    self.janitor.remove_later(live.sandbox)

    def _forget(self, live: LiveTask) -> None:
        self.live.pop(live.id)
        self._close_log(live.log_key)

    def _close_log(self, log_key: str) -> None:
        if not any(t.log_key == log_key for t in self.live) and (r := router()):
            r.close(log_key)
