"""One task's life on this replica: preparing -> running -> evaluating -> its end, then cleanup.

:meth:`TaskRun.run` is the whole of it on one screen. Each stage is a method; whatever ends the
task early is an exception that carries its outcome (:mod:`services.green.tasks.end`), so the run
has three endings: the task ran to its evaluation, it was cancelled, or an exception said how it
ended. Cleanup (the container) runs on every path, and the terminal status is written only after
it, so a client that sees ``completed`` also sees the container gone. The claim, the queue and
the process around it are :mod:`services.green.tasks.orchestrator`; purple's requests to the running
task are :mod:`services.green.tasks.live_task`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from services.green.kinds.base import stored
from services.green.store.models import FailureKind, TaskStatus, utcnow
from services.green.tasks.end import GreenFault, TaskEnd, task_end
from services.green.tasks.leak_audit import leak_audit
from services.green.tasks.live_task import LiveTask, TaskEvent, TaskLost
from services.green.tasks.provenance import provenance_of, purple_card
from services.green.tasks.purple_link import NEVER_STARTED, PurpleLink, PurpleUnreachable
from services.green.tasks.runtime import TaskRuntime
from services.sandbox.base import SandboxError
from services.shared.aio import through_cancels
from services.shared.logging import get_logger
from services.shared.outcome import TaskOutcome
from services.shared.protocol import TaskAssignment, TaskLimits
from services.shared.telemetry import OFF, Note

log = get_logger("services.green.tasks.run")


class TaskRun:
    """The runner of one claimed task (``asyncio`` task ``task-<id>``)."""

    def __init__(self, orch: TaskRuntime, live: LiveTask) -> None:
        self.orch = orch
        self.live = live
        self.settings = orch.settings
        self.provenance: dict[str, Any] | None = None
        """What decides the task's score (:mod:`services.green.tasks.provenance`), as recorded."""
        self.span: Note = OFF
        """The task's span (:mod:`services.shared.telemetry`; OFF when tracing is off)."""

    async def run(self) -> None:
        """The whole life of the task (its log file open throughout; its trace, when traced)."""
        live = self.live
        live.started.set()
        with (
            live.log_context(),
            self.orch.tracing.task(live.id, live.ref.kind, str(live.ref)) as self.span,
        ):
            await self._live()

    async def _live(self) -> None:
        live, sweep = self.live, False
        outcome: TaskOutcome | None = live.outcome(
            TaskStatus.failed, "harness_error", "green stopped unexpectedly", FailureKind.infra
        )
        try:
            await self.prepare()
            outcome = await self.evaluate(await self.serve())
        except asyncio.CancelledError:  # a cancel request (a shutdown is recorded below)
            reason = live.cancel_reason or "cancelled"
            outcome = live.outcome(TaskStatus.cancelled, "cancelled", reason)
        except TaskLost:  # another replica ended it: nothing of ours is written
            outcome = None
        except Exception as exc:  # it says how the task ended (task_end: whose failure)
            end = self._ended_by(exc)
            sweep = end.sweep
            outcome = live.outcome(end.status, end.end_reason, str(end), end.failure_kind)
        finally:
            # Cleanup and the final record must happen even if this runner is cancelled again
            # (e.g. a cancel request racing with shutdown): wait for them through any cancel.
            await through_cancels(self.cleanup())
            if outcome is not None:
                infra = outcome.failure_kind is FailureKind.infra
                self.span.ended(outcome.status.value, outcome.end_reason, error=infra)
            try:
                if outcome is not None and not live.lost:
                    await through_cancels(self.finish(outcome))
            finally:  # written or not (then retried by the orchestrator's endings): slot free
                self.orch.forget(live, sweep=sweep)

    def _ended_by(self, exc: Exception) -> TaskEnd:
        end = task_end(exc, self.live.status)
        with self.live.log_context():
            if end.end_reason == "harness_error":
                log.exception("task.crashed")
            elif end.end_reason == "storage":
                log.error("task.storage_failed", status=self.live.status.value, error=str(exc))
        return end

    # ---- recording the stages ------------------------------------------------------------

    async def _transition(self, status: TaskStatus, message: str, **fields: Any) -> None:
        """Record a stage (not its end: :mod:`.endings`), only while this replica still holds
        the task: one that was taken over (its lease ran out) raises TaskLost."""
        live = self.live
        if not await self._held(status=status, **fields):
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

    async def _write(self, **fields: Any) -> None:
        if not await self._held(**fields):
            self.live.lost = True
            raise TaskLost(self.live.id)

    async def _held(self, **fields: Any) -> bool:
        store, name = self.orch.store, self.settings.instance_name
        return await self.orch.db.run_behind(store.update_held, self.live.id, name, **fields)

    async def _writes_landed(self, judged: bool = False) -> None:
        """Wait for the task's own records (commands, usage:
        :mod:`~services.green.ledger.task_writes`). Before it is judged, one that could not be
        written ends the task as green's failure."""
        if self.live.writes is not None:
            await self.live.writes.flush()
        if not judged and isinstance(self.live.fault, GreenFault):
            raise self.live.fault

    def _progress(self, line: str) -> None:
        """A line of the sandbox provider's progress (an image pull): logged, and an event."""
        with self.live.log_context():
            log.info("sandbox.progress", detail=line)
        self.live.publish(TaskEvent(self.live.id, self.live.status, line))

    # ---- the stages ------------------------------------------------------------------------

    async def prepare(self) -> None:
        live, io = self.live, self.orch.io
        with live.log_context():
            await self._transition(TaskStatus.preparing, "fetching assets")
            live.plan = plan = await io(live.kind.prepare, live.ref.id)
            await self._write(
                workspace_dir=plan.paths.workspace, ground_truth=stored(plan.ground_truth())
            )
            spec = live.sandbox_spec(self.settings)
            # Shielded: a cancel must not lose a container the thread is still creating.
            live.creating = asyncio.ensure_future(self.orch.sandboxes.create(spec, self._progress))
            live.sandbox = await asyncio.shield(live.creating)
            await self._write(container_name=live.sandbox.name)
            log.info(
                "sandbox.created",
                container=live.sandbox.name,
                image=spec.image,
                engine=live.sandbox.engine,
            )
            await plan.populate(live.sandbox)
            self.provenance = await provenance_of(
                live, self.settings, await self.orch.get(live.id), io
            )
            await self._write(provenance=self.provenance)

    async def serve(self) -> str:
        """Hand the task to purple, then wait for a submission or an ending. Returns why it ended."""
        live = self.live
        with live.log_context():
            now = time.monotonic()
            live.deadline = now + live.task_timeout_s
            live.last_activity = now
            deadline_at = datetime.now(UTC) + timedelta(seconds=live.task_timeout_s)
            await self._transition(TaskStatus.running, "sent to purple", started_at=utcnow())
            self.orch.wakeup.set()  # one fewer task starting: the dispatcher may claim another
            assert live.plan is not None
            assignment = live.kind.assignment(
                task_id=live.id,
                token=live.token,
                green_url=self.settings.reachable_url(),
                paths=live.plan.paths,
                offers=list(getattr(live.plan, "offers", ())),
                limits=TaskLimits(
                    max_steps=live.max_steps,
                    command_timeout_s=live.command_timeout_s,
                    deadline=deadline_at,
                ),
            )
            link = self.orch.purple_link(live.purple_url)
            try:
                await self._hand_over(link, assignment)
                await self._record_purple()
                return await self._wait_for_end(link)
            finally:  # whatever ended the task, purple's task ends too (and says why)
                # A reply told purple the task is over: let it end by itself (and say so) before
                # a cancel could overtake that reply.
                grace = 3.0 if live.told_purple_it_ended else 0.0
                live.agent_report = await through_cancels(link.stop(grace))
                await link.aclose()

    async def _hand_over(self, link: PurpleLink, assignment: TaskAssignment) -> None:
        """Send purple the task. A purple that was never reached ends the task as
        ``purple_unreachable``, which a resumed run starts again (it never started); one that
        used the task (its token came with the hand-over) and then failed to answer it is
        charged with the attempt: ``purple_handover_failed``, never a free second try."""
        live = self.live
        assert live.plan is not None
        try:
            await link.start(assignment, live.plan.describe(assignment))
        except PurpleUnreachable as exc:
            used = live.commands + live.submissions + live.requests_in_flight
            if exc.reason != NEVER_STARTED or not used:
                raise
            raise TaskEnd(
                "purple_handover_failed",
                f"purple used the task ({live.commands} command(s), {live.submissions} "
                f"submission(s)) but did not answer its hand-over: {exc}",
                FailureKind.agent,
            ) from exc

    async def _record_purple(self) -> None:
        """Purple's card as it is now that purple took the task, into the provenance: read for
        every task, so a purple restarted at the same URL with other settings is recorded as
        it is (one restarted after this no longer knows the task: it ends as ``purple_lost``)."""
        card = await purple_card(self.live.purple_url)
        self.provenance = {**(self.provenance or {}), "purple": card}
        await self._write(provenance=self.provenance)

    async def _wait_for_end(self, link: PurpleLink) -> str:
        live, poll = self.live, self.settings.purple_poll_s
        while True:
            now = time.monotonic()
            idle_left = live.last_activity + self.settings.idle_timeout_s - now
            deadline_left = live.deadline - now
            if deadline_left <= 0:
                return "deadline"
            if idle_left <= 0:
                return "idle_timeout"
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(poll, idle_left, deadline_left)):
                    await live.ended.wait()
            if live.fault is not None:  # it ended the task while serving the agent
                raise live.fault
            if live.ended.is_set():
                return "submitted"
            if live.sandbox is not None and live.sandbox.lost:  # e.g. its engine went down
                raise SandboxError(live.sandbox.lost)
            ended = await link.ended()
            if ended and not live.ended.is_set():
                if time.monotonic() >= live.deadline:  # e.g. purple stopped at the deadline
                    return "deadline"
                live.end_detail = getattr(link, "lost_reason", None)
                return f"purple_{ended}"

    async def evaluate(self, end_reason: str) -> TaskOutcome:
        live = self.live
        with live.log_context():
            await self._writes_landed()
            await self._transition(TaskStatus.evaluating, f"ended: {end_reason}")
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

    async def finish(self, outcome: TaskOutcome) -> None:
        """Write the end: the outcome, the scores (zeros, explained, when there were none), the
        submission of a completed task, purple's own words and final usage."""
        live = self.live
        await self._writes_landed(judged=True)
        if self.orch.stopping and outcome.status is not TaskStatus.completed:
            outcome = live.outcome(
                TaskStatus.failed, "interrupted", "green shut down", FailureKind.infra
            )
        fields: dict[str, Any] = {}
        if outcome.scores is not None:
            fields["scores"] = outcome.scores
        elif live.plan:  # no valid submission: zeros, explained
            fields["scores"] = stored(await live.plan.score(None))
        audited = fields.get("scores") is not None and not self.orch.stopping
        if audited and (leak := await self._leak_audit()) is not None:
            fields["scores"] = {**fields["scores"], "leak": leak}
        if outcome.status is TaskStatus.completed:
            fields["submission"] = stored(live.submission)
        fields.update(live.report_fields())
        await self.orch.endings.end(live, outcome, {"finished_at": utcnow(), **fields})

    async def _leak_audit(self) -> dict[str, Any] | None:
        """The leak audit (:mod:`.leak_audit`); one that fails is logged, never the task's end."""
        try:
            return await leak_audit(self.orch, self.live)
        except Exception:
            with self.live.log_context():
                log.exception("leak.audit_failed")
            return None

    async def cleanup(self) -> None:
        live, janitor = self.live, self.orch.janitor
        with live.log_context():
            if live.sandbox is None and live.creating is not None:
                # cancelled while the container was being created: wait for it (if it was
                # never created, its error is already the task's outcome)
                with contextlib.suppress(Exception):
                    live.sandbox = await live.creating
            if live.sandbox is not None and live.sandbox.lost:  # its engine is down: the
                janitor.remove_later(live.sandbox)  # removal waits for it, the task not
            elif live.sandbox is not None:
                try:
                    await live.sandbox.remove()
                    log.info("sandbox.removed", container=live.sandbox.name)
                except Exception as exc:  # the engine is unreachable: retried in the background
                    log.warning(
                        "sandbox.remove_failed", container=live.sandbox.name, error=str(exc)
                    )
                    janitor.remove_later(live.sandbox)
