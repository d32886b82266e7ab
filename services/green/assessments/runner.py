"""Running a list of tasks against one purple and aggregating the scores.

Serves the A2A ``Task ID: arvo:<n>`` message (one task), the AgentBeats assessment request
(``{"participants": {...}, "config": {"task_ids": [...]}}``), ``POST /assessments`` and the
batch CLI. Concurrency is bounded by the orchestrator's queue. However it started, an assessment
is one record (given a store): written when its tasks are created, finished when they end, so
the runs page and ``GET /assessments/<id>`` show it and its tasks link to it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, Field, field_validator

from services.green.kinds.errors import AssetError, UnknownTask
from services.green.kinds.registry import CheckedRef
from services.green.store.crud import AssessmentStore
from services.green.store.models import AssessmentRecord, Task, utcnow
from services.green.tasks.orchestrator import Orchestrator, TaskOptions
from services.shared.aio import through_cancels
from services.shared.logging import get_logger
from services.shared.outcome import TaskOutcome, TaskStatus
from services.shared.scores import aggregate_kinds, flat_scores, kind_aggregates, metric_names
from services.shared.task_ref import TaskRef

log = get_logger("services.green.assessments.runner")

PURPLE_ROLES = ("purple", "agent", "participant", "solver", "rca_agent", "analyst")


class AssessmentRequest(BaseModel):
    task_ids: list[CheckedRef] = Field(min_length=1, max_length=100_000)
    """At most GREEN_MAX_ASSESSMENT_TASKS (checked at intake)."""
    purple_url: str | None = None
    max_steps: int | None = Field(None, ge=1, le=10_000)
    task_timeout_s: float | None = Field(None, gt=0, le=86_400)
    command_timeout_s: float | None = Field(None, gt=0, le=3_600)
    verified_only: bool = False
    """Leave out the tasks that ``arena tasks verify`` has not verified (REST only)."""
    trials: int = Field(1, ge=1, le=100)
    """Independent attempts per task, each its own green task with its trial index."""

    @field_validator("task_ids", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> list[Any]:
        """One id or a list of them (each read by ``parse_ref``: a bare id is an ARVO id)."""
        if isinstance(v, str | int):
            v = [v]
        if not isinstance(v, list):
            raise ValueError("task_ids must be a list of task ids")
        return v

    @classmethod
    def from_agentbeats(
        cls, participants: dict[str, str], config: dict[str, Any]
    ) -> AssessmentRequest:
        if len(participants) == 1:
            url = next(iter(participants.values()))
        else:
            role = next((r for r in PURPLE_ROLES if r in participants), None)
            if role is None:
                raise ValueError(f"which participant is the agent? roles: {sorted(participants)}")
            url = participants[role]
        ids = config.get("task_ids") or config.get("tasks") or config.get("task_id")
        if not ids:
            raise ValueError('config.task_ids is required (e.g. ["arvo:10055"])')
        limits = {
            k: config[k]
            for k in ("max_steps", "task_timeout_s", "command_timeout_s", "trials")
            if k in config
        }
        return cls(task_ids=ids, purple_url=url, **limits)


class UnknownTasks(UnknownTask):
    """Tasks green cannot run, every one named with its kind's reason: a request naming any is
    refused whole, before anything starts, and never scores them."""

    def __init__(self, reasons: dict[str, str]) -> None:
        self.reasons = reasons
        """Each reference (``arvo:10055``) with its kind's reason."""
        listed = "; ".join(f"{ref}: {why}" for ref, why in reasons.items())
        super().__init__(f"green does not know {len(reasons)} of the tasks: {listed}")


class AssessmentResult(BaseModel):
    assessment_id: str
    purple_url: str
    tasks: list[TaskOutcome]
    aggregate: dict[str, Any]

    def flat(self) -> dict[str, Any]:
        """The aggregate as one flat row with stable keys (every kind's metrics, each over its
        own tasks; empty for a kind of its own means), with the assessment's id and purple."""
        kinds = kind_aggregates(self.aggregate)
        if not kinds or any("uncertainty" not in a for a in kinds.values()):
            return {}
        return {
            "assessment_id": self.assessment_id,
            "purple_url": self.purple_url,
            **flat_scores(self.aggregate),
        }

    def summary(self) -> str:
        agg = self.aggregate
        lines = [
            f"Assessment {self.assessment_id}: {len(self.tasks)} task(s) against {self.purple_url}"
        ]

        def figures(d: dict[str, Any]) -> str:
            """The metrics of a score or of means: the kind's, as found in the record."""
            return " ".join(f"{k}={float(d[k]):.3f}" for k in metric_names([d]))

        lines += [f"  {t.ref} {t.status.value:<9} {figures(t.scores or {})}" for t in self.tasks]
        kinds = kind_aggregates(agg)
        for kind, one in kinds.items():
            of = f" {kind} task(s)" if len(kinds) > 1 else ""
            if means := one.get("mean_all"):
                lines.append(f"  mean over {means.get('n', 0)}{of}: {figures(means)}")
            ivs = (one.get("uncertainty") or {}).get("mean_all") or {}
            shown = [
                f"{k}=[{iv['ci_low']:.3f},{iv['ci_high']:.3f}]"
                for k, iv in ivs.items()
                if iv.get("ci_low") is not None
            ]
            if shown:  # none over one task (no interval can be computed): no line
                lines.append("  95% intervals: " + " ".join(shown))
        return "\n".join(lines)


Progress = Callable[[str], Awaitable[None]]


class AssessmentRunner:
    def __init__(
        self,
        orchestrator: Orchestrator,
        *,
        heartbeat_s: float = 60.0,
        store: AssessmentStore | None = None,
    ) -> None:
        self.orchestrator = orchestrator
        self.store = store
        """Where each assessment's record is kept (None: no records, e.g. a one-off CLI run)."""
        self.heartbeat_s = heartbeat_s
        """A progress line at least this often, even when no task moves (a slow LLM): the
        AgentBeats gateway gives up on a stream that stays silent for about 300 s."""

    async def start(
        self, request: AssessmentRequest, assessment_id: str | None = None
    ) -> list[Task]:
        """Create every task. All ids are checked first: one unknown id refuses the request
        (UnknownTask) before any task starts."""
        aid = assessment_id or str(uuid.uuid4())
        opts = TaskOptions(
            purple_url=request.purple_url,
            max_steps=request.max_steps,
            task_timeout_s=request.task_timeout_s,
            command_timeout_s=request.command_timeout_s,
            assessment_id=aid,
        )
        refs = request.task_ids
        await self.check(refs)
        await self._record_start(aid, request)
        try:
            tasks = [
                await self.orchestrator.create_task(ref, replace(opts, trial=trial), record=False)
                for ref in refs
                for trial in range(1, request.trials + 1)
            ]
            await self.orchestrator.record(*tasks)  # all or none
            return tasks
        except BaseException as exc:
            await self.record_end(
                aid, TaskStatus.failed, error=f"its tasks were not created: {exc}"
            )
            raise

    async def check(self, refs: list[TaskRef]) -> None:
        """Raise :class:`UnknownTasks` naming every reference its kind does not know (checked
        all, so one answer names them all), ValueError for a kind this green does not serve. A
        source that fails otherwise (slow, broken) refuses nothing: preparation reports it."""
        unknown: dict[str, str] = {}
        for ref in dict.fromkeys(refs):
            kind = self.orchestrator.kind(ref.kind)
            try:
                await asyncio.to_thread(kind.check, ref.id)
            except UnknownTask as exc:
                unknown[str(ref)] = str(exc)
            except AssetError as exc:
                log.warning("intake.asset_check_failed", task_ref=str(ref), error=str(exc))
        if unknown:
            raise UnknownTasks(unknown)

    async def _record_start(self, aid: str, request: AssessmentRequest) -> None:
        if self.store is None:
            return
        settings = self.orchestrator.settings
        await self.orchestrator.db.run_to_end(  # a 503 means no assessment was started
            self.store.add,
            AssessmentRecord(
                id=aid,
                purple_url=request.purple_url or settings.purple_url,
                request=request.model_dump(mode="json"),
                owner=settings.instance_name,
            ),
        )

    async def record_end(self, aid: str, status: TaskStatus, **fields: Any) -> None:
        """Finish the record (also a client's run: ``POST /runs/{id}/end``); a store that fails
        here is logged (the tasks' rows still hold
        every result, and a restart marks the record failed)."""
        if self.store is None:
            return
        try:
            await self.orchestrator.db.run(
                self.store.update, aid, status=status, finished_at=utcnow(), **fields
            )
        except Exception as exc:
            log.error("assessment.record_failed", assessment_id=aid, error=repr(exc))

    async def run(
        self,
        request: AssessmentRequest,
        progress: Progress | None = None,
        assessment_id: str | None = None,
    ) -> AssessmentResult:
        return await self.follow(await self.start(request, assessment_id), progress)

    async def follow(self, tasks: list[Task], progress: Progress | None = None) -> AssessmentResult:
        """Wait for the tasks of one assessment, reporting each task event (and a heartbeat)."""
        aid = tasks[0].assessment_id or ""
        last_sent = time.monotonic()

        async def report(text: str) -> None:
            nonlocal last_sent
            last_sent = time.monotonic()
            if progress is not None:
                await progress(text)

        async def heartbeat() -> None:
            while True:
                await asyncio.sleep(self.heartbeat_s / 4)
                if time.monotonic() - last_sent >= self.heartbeat_s:
                    rows = await self.orchestrator.db.run(
                        self.orchestrator.store.get_many, [t.id for t in tasks]
                    )
                    ended = sum(t.status.terminal for t in rows)
                    await report(
                        f"assessment {aid}: {ended}/{len(tasks)} task(s) ended; still working"
                    )

        beat = asyncio.create_task(heartbeat())
        try:
            await report(f"assessment {aid}: {len(tasks)} task(s) queued")
            await asyncio.gather(*(self._follow(t, report) for t in tasks))
            result = self.result(aid, [await self.orchestrator.get(t.id) for t in tasks])
        except asyncio.CancelledError:
            await through_cancels(
                self.record_end(aid, TaskStatus.cancelled, error="assessment cancelled")
            )
            raise
        except BaseException as exc:
            await self.record_end(aid, TaskStatus.failed, error=repr(exc))
            raise
        finally:
            beat.cancel()
        await self.record_end(aid, TaskStatus.completed, result=result.model_dump(mode="json"))
        return result

    async def _follow(self, task: Task, progress: Progress) -> None:
        q = await self.orchestrator.subscribe(task.id)
        waiter = asyncio.create_task(self.orchestrator.wait(task.id))
        try:
            while not waiter.done():
                getter = asyncio.create_task(q.get())
                done, _ = await asyncio.wait({getter, waiter}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    ev = getter.result()
                    await progress(f"{task.ref} [{task.id[:8]}] {ev.status.value}: {ev.message}")
                else:
                    getter.cancel()
        except asyncio.CancelledError:
            await self.orchestrator.cancel(task.id, "assessment cancelled")
            raise
        finally:
            if not waiter.done():
                waiter.cancel()

    def result(self, assessment_id: str, tasks: list[Task]) -> AssessmentResult:
        outcomes = [TaskOutcome.of(t) for t in tasks]
        purple = tasks[0].purple_url if tasks else ""
        return AssessmentResult(
            assessment_id=assessment_id,
            purple_url=purple,
            tasks=outcomes,
            aggregate=self.aggregate(outcomes),
        )

    def aggregate(self, outcomes: list[TaskOutcome]) -> dict[str, Any]:
        """Each kind's own aggregate over its own tasks; a run of one kind (the usual case) gets
        it at the top (:func:`services.shared.scores.aggregate_kinds`)."""
        return aggregate_kinds(
            outcomes, one=lambda kind, rows: self.orchestrator.kind(kind).aggregate(rows)
        )
