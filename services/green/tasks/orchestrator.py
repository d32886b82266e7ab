"""Green's tasks in this process: intake, the claim, cancels, waiting, and the process's own life.

A task goes queued -> preparing -> running -> evaluating -> completed | failed | cancelled.
One :class:`Orchestrator` per green process. A task's id is a fresh UUID and is also the A2A
context id of every message of that task. Intake writes a ``queued`` row; the replica's
dispatcher (:mod:`services.green.tasks.replicas`) claims queued rows while it has free slots, on this
replica or any other sharing the database, and hands them to :meth:`Orchestrator.adopt`, which starts the task's
runner (:class:`services.green.tasks.run.TaskRun`: one task's life, its stages and its end). Each
task gets its own container (which holds its workspace), token, log file and counters. The store
is written at every transition, so ``GET /tasks/{id}`` and a SQLite shell show the truth
mid-task. Cleanup (the container) runs on every exit path.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError

from services.green.config import GreenSettings
from services.green.edge.intake_limits import allowed_purple
from services.green.kinds.base import TaskKind
from services.green.kinds.errors import AssetError, UnknownTask
from services.green.kinds.registry import bug_of
from services.green.ledger.queue import HELD, TaskQueue
from services.green.ledger.task_writes import TaskWrites
from services.green.store.crud import TaskStore
from services.green.store.errors import STORAGE_ERRORS, DatabaseUnavailable
from services.green.store.group_commit import GroupCommit
from services.green.store.models import Task, TaskStatus
from services.green.store.offloop import Database
from services.green.tasks.endings import Endings
from services.green.tasks.live_task import LiveTask, LiveTasks, TaskEvent, TaskNotFound
from services.green.tasks.purple_link import PurpleLink
from services.green.tasks.run import TaskRun
from services.green.tasks.watch import RemoteWatch, subscribe, unsubscribe
from services.sandbox.base import SandboxProvider
from services.sandbox.janitor import Janitor
from services.shared.aio import cancel_and_wait
from services.shared.logging import get_logger, task_log_context
from services.shared.task_ref import TaskRef
from services.shared.telemetry import Tracing
from services.shared.threads import started_pool

log = get_logger("services.green.tasks.orchestrator")

STARTING = (TaskStatus.queued, TaskStatus.preparing)
"""A live task's statuses until its container is ready and it is handed to purple."""


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


AS_ASKED = (
    "kind",
    "ref_id",
    "trial",
    "assessment_id",
    "purple_url",
    "max_steps",
    "task_timeout_s",
    "command_timeout_s",
)
"""What a task was asked for: a client's id posted again with the same makes no new task."""


class TaskIdTaken(Exception):
    """A client's task id names a task asked for with something else (the API's 409)."""


class Orchestrator:
    """Runs every task of this process from intake to cleanup."""

    def __init__(
        self,
        settings: GreenSettings,
        store: TaskStore,
        sandboxes: SandboxProvider,
        kinds: Mapping[str, TaskKind],
        purple_link: Callable[[str], PurpleLink] | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.settings = settings
        self.tracing = tracing or Tracing.off()
        """Opt-in traces: a span per task, the root of its trace (:mod:`.run`)."""
        self.store = store
        self.sandboxes = sandboxes
        self.kinds = dict(kinds)
        self.purple_link = purple_link or self._default_link
        """Purple's A2A endpoint for one task, by URL."""
        self.db = Database(settings.database_deadline_s)
        """Every database call of the event loop runs through it, off the loop."""
        self._inserts: GroupCommit[Task] = GroupCommit(
            lambda t: self.db.run_to_end(store.add_all, t), alone_on=(IntegrityError,)
        )
        """Intake's inserts: those made while one is under way share the next transaction; one
        under way at the deadline is waited for, so a refusal (503) means no task was made."""
        self.live = LiveTasks(settings)
        """The tasks this process is working on; purple's execute/submit are served there."""
        self.endings = Endings(store, self.db, settings.instance_name)
        """Ends not yet written (the database failed): retried until they land."""
        self._stopping = False
        self._health: asyncio.Task[None] | None = None
        self._known: set[TaskRef] = set()
        """Tasks whose source was found to have them (the intake asks once per id: a thread
        hop less per POST /tasks; bounded by the ids of the datasets served)."""
        self._unfinished = self._queued = self._queued_at_count = 0
        """The database's count of unfinished tasks, this replica's intake ever, and that
        intake when the count was read (:meth:`unfinished`)."""
        self._stops: set[asyncio.Task[None]] = set()
        """Background stops (:meth:`stop_soon`), held until they end."""
        self.task_end_hooks: list[Callable[[str], None]] = []
        """Called (in a thread) with a task's image after it ended (e.g. the disk budget)."""
        self.queue = TaskQueue(store.engine)
        self.wakeup = asyncio.Event()
        """Set when a task was queued or a slot freed: the dispatcher claims at once."""
        self.remote = RemoteWatch(store, self.db)
        """Listeners of tasks this replica does not run (queued, or run by another replica)."""
        # Docker and file work is blocking: threads enough for every running task, all started.
        self._pool = started_pool(settings.max_concurrent_tasks * 2 + 4, "green-io")
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
        failed = await self.db.run(
            self.store.fail_unfinished, "interrupted by restart", self.settings.instance_name
        )
        await self.count_unfinished()
        self._health = asyncio.create_task(self.db.watch(self.store.probe), name="database-health")
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
        await self.stop(*live)
        await self.endings.close(wait_s=min(self.settings.lease_s, 10.0))
        await self.janitor.close()
        if self._health is not None:
            await cancel_and_wait(self._health)
        self._pool.shutdown(wait=True, cancel_futures=True)
        await asyncio.to_thread(self.tracing.shutdown)  # the spans still buffered
        log.info("green.stopped", stopped_tasks=[t.id for t in live])

    async def io(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking call (Docker, files) in green's thread pool."""
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    # ---- intake ------------------------------------------------------------------------

    def room(self) -> int:
        """How many more tasks this replica may claim now: its free slots, and no more of its
        tasks starting at once (claimed, their containers not yet ready) than its engines admit
        (``SandboxProvider.can_start``: none while no engine answers promptly). The rest wait
        in the queue, so a burst never drowns the engine."""
        free = self.settings.max_concurrent_tasks - len(self.live)
        starting = sum(1 for t in self.live if t.status in STARTING)
        return min(free, self.sandboxes.can_start() - starting)

    def unfinished(self) -> int:
        """Tasks not yet ended, of every replica (the intake's bound), without a database read:
        the database's count as of the replica's last round, plus this replica's intake since
        (counted twice if it landed during the count: the bound errs on the safe side). While
        the database is away the count is not known: DatabaseUnavailable (a 503)."""
        if self.db.away:
            raise DatabaseUnavailable("green's database is away: the queue cannot be counted")
        return self._unfinished + self._queued - self._queued_at_count

    async def count_unfinished(self) -> None:
        """Read the count of unfinished tasks again (every round of the replica's watch)."""
        queued = self._queued
        self._unfinished = await self.db.run(self.store.count_unfinished)
        self._queued_at_count = queued

    def kind(self, name: str) -> TaskKind:
        if name not in self.kinds:
            raise ValueError(f"unknown task kind {name!r} (known: {', '.join(self.kinds)})")
        return self.kinds[name]

    async def create_task(
        self,
        ref: TaskRef,
        options: TaskOptions | None = None,
        *,
        record: bool = True,
        task_id: str | None = None,
    ) -> Task:
        """Check and record as queued (any replica's dispatcher may claim it; ``record=False``:
        :meth:`record` does), under ``task_id`` or a new one. ``ref`` was read at the edge
        (``kinds.registry.parse_ref``). Raises ValueError for a kind this green does not serve
        or a purple URL it may not use, UnknownTask for an id the source lacks."""
        opts = options or TaskOptions()
        s = self.settings
        purple_url = allowed_purple(self.settings, opts.purple_url)
        task_kind = self.kind(ref.kind)
        if ref not in self._known:  # an id its source had is not asked about again
            try:  # cheap existence check; also warms the cache for preparation
                await self.io(task_kind.check, ref.id)
                self._known.add(ref)
            except UnknownTask:
                raise
            except AssetError as exc:  # the source is slow or broken: preparation retries
                log.warning("intake.asset_check_failed", task_ref=str(ref), error=str(exc))
        task = Task(
            id=task_id or str(uuid.uuid4()),
            kind=task_kind.name,
            ref_id=ref.id,
            bug=bug_of(task_kind.name, ref.id),
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
            await self.record(task)
        return task

    async def made_before(
        self, task_id: str, ref: TaskRef, options: TaskOptions | None = None
    ) -> Task | None:
        """The task a client's ``task_id`` made, as it is now (None: none yet). Raises
        :class:`TaskIdTaken` when it was asked for with something else (:data:`AS_ASKED`), and
        what :meth:`create_task` raises for a task green would not make.

        The id is looked up first: an id no task has costs no question to the task's source
        (an intake bound that refused the post stays its answer), and of a task it made, the
        reference was checked then."""
        made = await self.db.run(self.store.get, task_id)
        if made is None:
            return None
        if (made.kind, made.ref_id) != (ref.kind, ref.id):
            raise TaskIdTaken(f"task {task_id} exists, asked for with other parameters")
        self._known.add(ref)
        asked = await self.create_task(ref, options, record=False, task_id=task_id)
        return await self._as_asked(asked)

    async def _as_asked(self, asked: Task) -> Task | None:
        made = await self.db.run(self.store.get, asked.id)
        if made is not None and any(getattr(made, k) != getattr(asked, k) for k in AS_ASKED):
            raise TaskIdTaken(f"task {asked.id} exists, asked for with other parameters")
        return made

    async def create_once(
        self, task_id: str, ref: TaskRef, options: TaskOptions | None = None
    ) -> tuple[Task, bool]:
        """:meth:`create_task` under a client's id, once: the id posted again (later, or at the
        same moment) finds the task it made, whose id the database will not take twice.
        Returns the task and whether it is new; raises :class:`TaskIdTaken` as
        :meth:`made_before` does."""
        asked = await self.create_task(ref, options, record=False, task_id=task_id)
        try:
            await self.record(asked)
        except IntegrityError:  # the id's task exists (or the database refused it otherwise)
            made = await self._as_asked(asked)
            if made is None:
                raise
            return made, False
        return asked, True

    async def record(self, *tasks: Task) -> None:
        """Queue these tasks, all or none (one transaction: a failing database queues none; the
        tasks recorded meanwhile by other requests may share it)."""
        await self._inserts(tasks)
        self._queued += len(tasks)
        for task in tasks:
            with task_log_context(task.id, f"{task.kind}_{task.ref_id}", task_ref=str(task.ref)):
                log.info("task.queued", purple_url=task.purple_url, max_steps=task.max_steps)
        self.wakeup.set()

    def adopt(self, task: Task) -> LiveTask:
        """Run a task this replica claimed from the queue (a fresh token: only we know it)."""
        live = LiveTask(row=task, kind=self.kind(task.kind), token=secrets.token_urlsafe(24))
        live.writes = TaskWrites(
            live,
            self.db,
            self.store,
            self.settings.instance_name,
            give_up_after_s=self.settings.lease_s,
            on_lost=self.stop_soon,
        )
        live.subscribers.extend(self.remote.hand_over(task.id))
        self.live.add(live)
        with live.log_context():
            log.info("task.claimed", instance=self.settings.instance_name)
            live.runner = asyncio.create_task(TaskRun(self, live).run(), name=f"task-{task.id}")
        return live

    async def get(self, task_id: str) -> Task:
        task = await self.db.run(self.store.get, task_id)
        if task is None:
            raise TaskNotFound(task_id)
        return task

    async def subscribe(self, task_id: str) -> asyncio.Queue[TaskEvent]:
        """Events of a task, whichever replica runs it (see :func:`watch.subscribe`)."""
        return await subscribe(self.live, self.remote, self.get, task_id)

    def unsubscribe(self, task_id: str, q: asyncio.Queue[TaskEvent]) -> None:
        unsubscribe(self.live, self.remote, task_id, q)

    async def wait(self, task_id: str) -> Task:
        """The task once it has ended, whichever replica runs it."""
        while True:
            live = self.live.get(task_id)
            if live is not None:
                await live.released.wait()
            try:
                task = await self.get(task_id)
            except STORAGE_ERRORS:  # the database is away: its end is read once it is back
                task = None
            if task is not None and task.status.terminal:
                return task
            await asyncio.sleep(min(self.settings.queue_poll_s, 0.5))

    async def cancel(self, task_id: str, reason: str = "cancelled by request") -> Task:
        """Cancel a task: a queued one at once, one of ours at once (returned ended), one of
        another replica through its cancel flag (returned as it is: its owner acts within
        GREEN_QUEUE_POLL_S)."""
        task = await self.get(task_id)
        live = self.live.get(task_id)
        if task.status.terminal:
            return task
        if task_id in self.endings:  # it has ended here; its end is being written: retry now
            self.endings.nudge(task_id)
            return task
        if live is None or live.runner is None:
            if await self.db.run(self.queue.cancel_queued, task_id, "cancelled"):
                await self.db.run(self.store.update, task_id, error=reason)
            elif task.owner == self.settings.instance_name and task.status in HELD:
                if await self.endings.end_orphan(task_id, reason):
                    self.janitor.sweep_soon()
            else:
                await self.db.run(self.queue.request_cancel, task_id)
            return await self.get(task_id)
        live.cancel_reason = reason
        await self.stop(live)
        return await self.get(task_id)

    async def stop(self, *lives: LiveTask) -> None:
        """Cancel these tasks' runners and wait until each has let its task go (its end written
        or pending in :attr:`endings`, its slot free); a cancel that is swallowed is repeated.

        A runner is cancelled only once it has started. A task cancelled before its first step
        never runs its body, so the runner's ``finally`` would never end the task: it would stay
        ``preparing``, its slot held and its lease renewed for good. That is what a cancel
        landing as the task is claimed did (the claim's adoption and the cancel resumed in the
        same loop turn), and a shutdown right after the dispatcher's last claim: they now wait
        that one step."""
        await asyncio.gather(*(live.started.wait() for live in lives))
        await cancel_and_wait(*(live.runner for live in lives if live.runner is not None))

    def stop_soon(self, live: LiveTask) -> None:
        """:meth:`stop` in the background (for a loop that must not wait for a runner's cleanup)."""
        stopping = asyncio.create_task(self.stop(live), name=f"stop-{live.id}")
        self._stops.add(stopping)
        stopping.add_done_callback(self._stops.discard)

    # ---- a task's end on this replica --------------------------------------------------

    def forget(self, live: LiveTask, *, sweep: bool = False) -> None:
        """A runner has ended (its end written or pending in :attr:`endings`): free its slot;
        ``sweep``: its engine failed, look for a container it may have left."""
        self.live.pop(live.id)
        if live.writes is not None:
            live.writes.close()
        live.released.set()
        self.wakeup.set()
        if sweep:
            self.janitor.sweep_soon()
        if live.plan is not None:
            for hook in self.task_end_hooks:
                with contextlib.suppress(RuntimeError):  # the pool is shut down
                    self._pool.submit(hook, live.plan.image)
