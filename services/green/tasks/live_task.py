"""The live task: the state of a task this process is working on, and purple's requests to it.

Purple's ``execute`` and ``submit`` reach a running task here: the task token is checked, the
limits (command size, command count, deadline) are applied, the command runs in the task's
container, and each command is recorded once (one log line, one event for listeners, and one
row in the ``commands`` table, written behind the answer by :mod:`services.green.ledger.task_writes`:
the agent never waits for the database). The lifecycle around it (queue, preparation, hand-over
to purple, evaluation, cleanup) is :mod:`services.green.tasks.orchestrator`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from services.green.config import GreenSettings
from services.green.kinds.base import TaskKind, TaskPlan, stored
from services.green.ledger.task_writes import TaskWrites
from services.green.store.errors import AGENT_SENTENCE, brief
from services.green.store.models import (
    Command,
    CommandPublic,
    FailureKind,
    Task,
    TaskStatus,
    utcnow,
)
from services.green.tasks.end import GreenFault
from services.sandbox.base import AgentFault, Sandbox, SandboxError, SandboxSpec
from services.shared.commands import CommandResult
from services.shared.logging import get_logger, task_log_context
from services.shared.outcome import TaskOutcome
from services.shared.protocol import AgentReport, Submit, SubmitResult, Usage
from services.shared.text import clip_middle

log = get_logger("services.green.tasks.live_task")

STORED_OUTPUT_CHARS = 8 * 1024
"""How much of each command's output the commands table keeps (head and tail)."""

Io = Callable[..., Awaitable[Any]]
"""Runs a blocking call (the sandbox, file reads) off the event loop."""


MAX_REQUESTS_IN_FLIGHT = 1
"""execute/submit requests of one task served at once; another one is refused at once."""
BUSY = (
    "another request of this task is still running; send one command at a time and wait for "
    "its result"
)
STEP_LIMIT = "step limit reached ({} commands); only submit is accepted now"
NO_RUN_POC = "this task does not offer run_poc (its task message lists what it grants)"
RUN_POC = "run_poc"  # how a PoC run is recorded among the task's commands
NOT_SERVED = "missing or wrong task token, or the task is not running here: it accepts no requests"


class TaskNotFound(KeyError):
    pass


class RequestRefused(Exception):
    """An execute/submit that green will not serve (bad token, task not running, limits)."""


class TaskLost(Exception):
    """The task is no longer this replica's: another one took it over after the lease ran out
    (this replica was frozen or cut off from the database). Its runner stops, writing nothing."""


@dataclass(frozen=True)
class TaskEvent:
    """What subscribers (the A2A executor streaming a task) hear about a task."""

    task_id: str
    status: TaskStatus
    message: str
    command: CommandPublic | None = None
    """The command just recorded, when the event is about one (the dashboard's live view)."""


def _of_row(name: str) -> Any:
    """A read-only attribute of a LiveTask that is its row's (the row holds it, not a copy)."""
    return property(lambda live: getattr(live.row, name), doc=f"The task row's ``{name}``.")


@dataclass
class LiveTask:
    """What green knows of a task it is working on beyond its row: the row as claimed (what the
    task is: id, reference, purple's URL, limits; never written through), the kind that serves
    it, its token, and the state of its life in this process."""

    row: Task
    kind: TaskKind
    token: str
    # the life of the task (orchestrator, run)
    status: TaskStatus = TaskStatus.queued
    plan: TaskPlan[Any, Any, Any] | None = None
    creating: asyncio.Future[Sandbox] | None = None
    """The container being created; cleanup waits for it, so a cancel never orphans it."""
    sandbox: Sandbox | None = None
    runner: asyncio.Task[None] | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    """Set by the runner's first step; only then may it be cancelled (``Orchestrator.stop``)."""
    released: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when this replica lets the task go: its end written (or pending in the endings), its
    slot free."""
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the task must stop waiting: a submission was accepted, or :attr:`fault`."""
    fault: Exception | None = None
    """What ended the task while it served the agent (its container broke, the agent's command
    ended it, green's database failed): raised by the runner, read by :mod:`.end`."""
    submission: BaseModel | None = None
    """The accepted submission: the kind's own model (a plan's ``S``)."""
    end_detail: str | None = None
    """Why the task ended, when more than its end reason says (e.g. how purple was lost)."""
    agent_report: AgentReport | None = None
    """How purple said it ended (its A2A task's final status), when it said so."""
    cancel_reason: str | None = None
    lost: bool = False
    """Its lease was not renewed (another replica ended it): stop without writing its end."""
    subscribers: list[asyncio.Queue[TaskEvent]] = field(default_factory=list)
    # serving purple's requests (the command path: LiveTasks)
    commands: int = 0
    """Commands run so far (the store's ``steps`` counter)."""
    submissions: int = 0
    deadline: float = 0.0
    last_activity: float = field(default_factory=time.monotonic)
    exec_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    requests_in_flight: int = 0
    """execute/submit requests admitted and not yet answered (at most one)."""
    usage: Usage | None = None
    """The agent's own running usage, as last reported (with a command, a submit or its end)."""
    disk_unknown: str | None = None
    """Why the sandbox's disk use was unknown when last looked at (None: measured, or no cap)."""
    writes: TaskWrites[LiveTask] | None = None
    """Its records (commands, usage, submissions), written behind the requests."""

    id = _of_row("id")
    purple_url = _of_row("purple_url")
    max_steps = _of_row("max_steps")
    task_timeout_s = _of_row("task_timeout_s")
    command_timeout_s = _of_row("command_timeout_s")
    ref = _of_row("ref")
    """The task reference (a :class:`TaskRef`: ``arvo:10055``, ``swebench:<instance id>``)."""

    @property
    def log_key(self) -> str:
        return f"{self.row.kind}_{self.row.ref_id}"

    @property
    def agent_fault(self) -> AgentFault | None:
        return self.fault if isinstance(self.fault, AgentFault) else None

    @agent_fault.setter
    def agent_fault(self, exc: AgentFault) -> None:
        """The agent's command ended the container (it stopped, a limit): ends the task."""
        self.fault = self.fault or exc

    def outcome(
        self,
        status: TaskStatus,
        end_reason: str,
        error: str | None = None,
        failure_kind: FailureKind | None = None,
        scores: BaseModel | None = None,
    ) -> TaskOutcome:
        """How this task ended (the counters are the store's)."""
        return TaskOutcome(
            task_id=self.id,
            kind=self.ref.kind,
            ref_id=self.ref.id,
            status=status,
            end_reason=end_reason,
            error=error,
            failure_kind=failure_kind,
            scores=stored(scores),
        )

    @property
    def told_purple_it_ended(self) -> bool:
        """Purple was told, in the reply to its own request, that the task is over (an accepted
        submission, or a refusal that ended the task): it ends its A2A task by itself."""
        return self.submission is not None or self.fault is not None

    def sandbox_spec(self, s: GreenSettings) -> SandboxSpec:
        """The container this task gets, from its plan and green's limits."""
        assert self.plan is not None
        return SandboxSpec(
            image=self.plan.image,
            task_id=self.id,
            ref_id=self.ref.id,
            workdir=self.plan.workdir,
            memory=s.container_memory,
            disk_limit=s.container_disk_bytes or None,
            disk_room=int(getattr(self.plan, "workspace_bytes", 0)),  # kinds that copy much in
            disk_check_s=s.disk_check_s,
            cpus=s.container_cpus,
            pids_limit=s.container_pids,
            network=s.container_network,
            output_limit=s.output_limit_bytes,
            agent_uid=s.agent_uid,
            writable=tuple(self.plan.writable),
        )

    def report_fields(self) -> dict[str, Any]:
        """The task record's fields from purple's final report: its reason (its own words), and
        its usage when it reported any (it supersedes the running totals)."""
        report = self.agent_report
        if report is None:
            return {}
        fields: dict[str, Any] = {"agent_reason": report.reason or None}
        usage = report.usage
        if usage.tokens_in or usage.tokens_out or usage.cost:
            fields.update(usage_fields(usage))
        return fields

    def log_context(self) -> contextlib.AbstractContextManager[None]:
        """Every log line inside goes to this task's log file, tagged with its ids."""
        return task_log_context(self.id, self.log_key, task_ref=str(self.ref))

    def publish(self, event: TaskEvent) -> None:
        for q in self.subscribers:
            q.put_nowait(event)

    def sandbox_broke(self, exc: SandboxError) -> None:
        """The container or the engine failed (not the agent): end the task as infra."""
        log.error("sandbox.broken", error=str(exc))
        self.fault = self.fault or SandboxError(f"the task container broke: {exc}")
        self.ended.set()

    def storage_broke(self, exc: BaseException, while_: str) -> RequestRefused:
        """Green's database failed while serving the agent: the task ends as infra (the detail
        goes to the log only). Returns the refusal the agent gets: one generic sentence."""
        with self.log_context():
            log.error("storage.failed_serving_agent", request=while_, error=str(exc))
        if self.fault is None:
            self.fault = GreenFault("storage", f"{brief(exc)} while serving the agent's {while_}")
        self.ended.set()
        return RequestRefused(AGENT_SENTENCE)


class LiveTasks:
    """The tasks this process is working on, by id, and the requests purple sends them."""

    def __init__(self, settings: GreenSettings) -> None:
        self.settings = settings
        self._tasks: dict[str, LiveTask] = {}

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._tasks

    def __iter__(self) -> Iterator[LiveTask]:
        return iter(list(self._tasks.values()))

    def __len__(self) -> int:
        return len(self._tasks)

    def get(self, task_id: str) -> LiveTask | None:
        return self._tasks.get(task_id)

    def add(self, live: LiveTask) -> None:
        self._tasks[live.id] = live

    def pop(self, task_id: str) -> None:
        self._tasks.pop(task_id, None)

    def has_token(self, token: str) -> bool:
        """Whether ``token`` is the token of a task this process holds (constant-time each)."""
        given = token.encode("utf-8", "replace")
        return any(secrets.compare_digest(given, live.token.encode()) for live in self)

    def running(self, task_id: str, token: str | None) -> LiveTask:
        """The running task a request addresses, once its token is checked. A request without
        the token learns nothing of the task: whether it is unknown, ended (its token is not
        kept) or running, the refusal is the same sentence; only the token's holder hears more."""
        live = self._tasks.get(task_id)
        if live is None:
            raise RequestRefused(NOT_SERVED)
        if self.settings.require_token and not (
            token and secrets.compare_digest(token.encode("utf-8", "replace"), live.token.encode())
        ):
            raise RequestRefused(NOT_SERVED)
        if live.status is not TaskStatus.running:
            raise RequestRefused(f"task {task_id} is {live.status.value}, not running")
        if isinstance(live.fault, GreenFault):  # green failed the task: it is ending
            raise RequestRefused(AGENT_SENTENCE)
        return live

    def _check_size(self, command: str) -> None:
        size = len(command.encode("utf-8", errors="surrogateescape"))
        if size > self.settings.command_max_bytes:
            raise RequestRefused(
                f"the command is {size:,} bytes; the limit is {self.settings.command_max_bytes:,}"
                " (write large content to a file in several smaller commands)"
            )

    async def execute(
        self,
        task_id: str,
        token: str | None,
        command: str,
        timeout: float | None = None,
        usage: Usage | None = None,
    ) -> CommandResult:
        """Run one of purple's commands in the task's container; its result (also what is sent
        back: the one command result type, never rebuilt).
        ``usage``: the agent's running totals, recorded as they accrue."""
        live = self.running(task_id, token)
        self._check_size(command)
        with self._one_at_a_time(live):  # before the lock: refused requests never queue
            self.note_usage(live, usage)
            async with live.exec_lock:
                return await self._execute(live, command, timeout)

    @contextlib.contextmanager
    def _one_at_a_time(self, live: LiveTask, counting_steps: bool = True) -> Iterator[None]:
        """Admit one execute/submit of a task at a time; another one is refused at once, so a
        flood of requests holds no connection for longer than its refusal."""
        if counting_steps and live.commands >= live.max_steps:  # again under the lock
            raise RequestRefused(STEP_LIMIT.format(live.max_steps))
        if live.requests_in_flight >= MAX_REQUESTS_IN_FLIGHT:
            raise RequestRefused(BUSY)
        live.requests_in_flight += 1
        try:
            yield
        finally:
            live.requests_in_flight -= 1

    async def run_poc(
        self, task_id: str, token: str | None, usage: Usage | None = None
    ) -> CommandResult:
        """``run_poc``: green runs the vulnerable target on the task's PoC in a judging container
        of its own (the plan's ``run_poc``), bounded and recorded like a command; refused with a
        sentence where the task does not offer it."""
        live = self.running(task_id, token)
        if RUN_POC not in getattr(live.plan, "offers", ()):
            raise RequestRefused(NO_RUN_POC)
        with self._one_at_a_time(live):
            self.note_usage(live, usage)
            async with live.exec_lock:
                return await self._execute(live, RUN_POC, None, self._run_poc)

    async def _run_poc(self, live: LiveTask, _command: str, limit: float) -> CommandResult:
        try:
            async with asyncio.timeout(limit):
                return await live.plan.run_poc(live.id)  # type: ignore[union-attr]
        except TimeoutError:
            why = f"[run_poc: the run did not finish within {limit:g} s and was stopped]"
            return CommandResult(exit_code=-1, output=why, timed_out=True, duration_s=limit)
        except SandboxError as exc:  # green's judging container or its engine failed: infra
            log.error("run_poc.failed", error=str(exc))
            live.fault = live.fault or SandboxError(f"run_poc's judging container failed: {exc}")
            live.ended.set()
            raise RequestRefused(AGENT_SENTENCE) from exc

    async def _execute(
        self,
        live: LiveTask,
        command: str,
        timeout: float | None,
        run: Callable[[LiveTask, str, float], Awaitable[CommandResult]] | None = None,
    ) -> CommandResult:
        if live.commands >= live.max_steps:
            raise RequestRefused(STEP_LIMIT.format(live.max_steps))
        live.last_activity = time.monotonic()
        limit = min(
            timeout or live.command_timeout_s,
            live.command_timeout_s,
            max(1.0, live.deadline - time.monotonic()),
        )
        started = utcnow()
        with live.log_context():
            result = await (run or self._run)(live, command, limit)
            live.commands += 1
            live.last_activity = time.monotonic()
            log.info(
                "command.executed",
                step=live.commands,
                command=command[:500],
                exit_code=result.exit_code,
                duration_s=round(result.duration_s, 4),
                timed_out=result.timed_out,
                truncated=result.truncated,
            )
        self._record(live, command, result, started)
        return result

    async def _run(self, live: LiveTask, command: str, limit: float) -> CommandResult:
        assert live.sandbox is not None and live.plan is not None
        try:
            return await live.sandbox.exec(live.plan.wrap(command), limit)
        except AgentFault as exc:  # the command ended its own container: end the task
            log.warning("sandbox.agent_fault", reason=exc.reason, error=str(exc))
            live.agent_fault = exc
            live.ended.set()
            raise RequestRefused(str(exc)) from exc
        except SandboxError as exc:  # the container is gone: the harness failed, end it
            live.sandbox_broke(exc)
            raise RequestRefused(AGENT_SENTENCE) from exc
        finally:
            self._note_disk(live)

    def _note_disk(self, live: LiveTask) -> None:
        """Tell the operator (the task's log and events) when its disk use turns unknown (its
        measurements keep failing: the cap is not watched meanwhile), and when it is known again."""
        unknown = live.sandbox.disk_unknown if live.sandbox is not None else None
        if unknown == live.disk_unknown:
            return
        live.disk_unknown = unknown
        if unknown:
            log.warning("disk.unknown", detail=unknown)
            message = f"the task's disk use is unknown: {unknown}"
        else:
            log.info("disk.known")
            message = "the task's disk use is measured again"
        live.publish(TaskEvent(live.id, live.status, message))

    def _record(self, live: LiveTask, command: str, result: CommandResult, started: Any) -> None:
        """The command's one row in the store (written behind the answer), and its event."""
        record = Command(
            task_id=live.id,
            seq=live.commands,
            command=command,
            exit_code=result.exit_code,
            duration_s=result.duration_s,
            timed_out=result.timed_out,
            truncated=result.truncated,
            output=clip_middle(result.output, STORED_OUTPUT_CHARS, "characters not stored"),
            created_at=started,
        )
        # built before the insert (which expires the record); only when someone listens
        shown = (
            CommandPublic.model_validate(record, from_attributes=True) if live.subscribers else None
        )
        assert live.writes is not None
        live.writes.command(record)
        live.publish(
            TaskEvent(
                live.id,
                live.status,
                f"step {live.commands}: {command[:80]} -> {result.exit_code}",
                shown,
            )
        )

    def note_usage(self, live: LiveTask, usage: Usage | None) -> None:
        """Record the agent's running usage when it changed (one conditional UPDATE, behind)."""
        if usage is None or usage == live.usage:
            return
        live.usage = usage
        assert live.writes is not None
        live.writes.held("execute", **usage_fields(usage))

    async def submit(self, task_id: str, token: str | None, stats: Submit) -> SubmitResult:
        """Read and check the agent's submission; an accepted one ends the task."""
        live = self.running(task_id, token)
        with self._one_at_a_time(live, counting_steps=False):
            async with live.exec_lock:
                return await self._submit(live, stats)

    async def _submit(self, live: LiveTask, stats: Submit) -> SubmitResult:
        live.last_activity = time.monotonic()
        assert live.plan is not None and live.sandbox is not None
        try:
            submission, errors = await live.plan.read_submission(live.sandbox)
        except SandboxError as exc:  # the engine or container failed, not the submission
            with live.log_context():
                live.sandbox_broke(exc)
            raise RequestRefused(AGENT_SENTENCE) from exc
        accepted = submission is not None and not errors
        live.submissions += 1
        live.usage = stats.usage()
        assert live.writes is not None
        live.writes.held("submit", submissions=live.submissions, **usage_fields(live.usage))
        with live.log_context():
            log.info(
                "submission.received",
                accepted=accepted,
                errors=errors,
                attempt=live.submissions,
            )
        if accepted:
            live.submission = submission
            live.ended.set()
        return SubmitResult(accepted=accepted, errors=errors)


def usage_fields(usage: Usage) -> dict[str, Any]:
    """The task record's usage columns from the agent's report."""
    return {"tokens_in": usage.tokens_in, "tokens_out": usage.tokens_out, "cost": usage.cost}
