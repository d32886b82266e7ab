"""Green's side of the conversation with purple: hand over a task, then watch purple's A2A task.

Every end of a task reaches purple: :meth:`PurpleLink.stop` cancels purple's A2A task
(``tasks/cancel``) unless purple ended it itself, and reads purple's final status once: its own
reason and usage (:class:`~services.shared.protocol.AgentReport`, or the status text).

Liveness: a purple that cannot be reached when a task is handed over is retried with backoff
(``start_retry_s``); one that stops answering polls for ``lost_after_s``, or no longer knows
the task (it restarted: its A2A task store is in memory), is *lost*, and green ends the task
at once instead of waiting for the idle timeout.
"""

from __future__ import annotations

import asyncio
import time

import httpx
from a2a.types import Role, Task, TaskState
from a2a.utils.errors import TaskNotFoundError
from pydantic import ValidationError

from services.green.store.models import FailureKind
from services.green.tasks.end import TaskEnd
from services.shared import telemetry
from services.shared.a2a import A2APeer, message_parts, new_protocol_message
from services.shared.logging import get_logger
from services.shared.protocol import AgentReport, TaskAssignment, clip_reason

log = get_logger("services.green.tasks.purple_link")

_ENDED = {
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "cancelled",
    TaskState.TASK_STATE_REJECTED: "rejected",
}


NEVER_STARTED = "purple_unreachable"
"""The end of a task whose hand-over purple never answered and that purple never used (no
command, no submission): it never started, and a resumed run runs it again."""


class PurpleUnreachable(TaskEnd):
    """Purple could not be reached or refused the task: the agent's failure. ``reason``:
    :data:`NEVER_STARTED` (the hand-over got no answer; the task runner charges a purple that
    used the task meanwhile with ``purple_handover_failed`` instead) or ``purple_refused``."""

    def __init__(self, message: str, reason: str = NEVER_STARTED) -> None:
        super().__init__(reason, message, FailureKind.agent)
        self.reason = reason


def _not_connected(exc: BaseException) -> bool:
    """True when the error (or one it wraps) says no connection was made: the request never
    reached purple, so sending it again cannot start the task twice."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, httpx.ConnectError | httpx.ConnectTimeout | ConnectionRefusedError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


class PurpleLink:
    """One task's link to purple. ``start`` does not block for the task: purple acknowledges
    (an A2A task in ``working``) and works in the background; ``ended`` polls that A2A task."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 30.0,
        lost_after_s: float = 10.0,
        start_retry_s: float = 0.0,
    ) -> None:
        self.base_url = base_url
        self._peer = A2APeer(base_url, timeout=timeout)
        self._purple_task_id: str | None = None
        self._lost_after_s = lost_after_s
        self._start_retry_s = start_retry_s
        self._poll_timeout = min(timeout, max(lost_after_s / 2, 2.0))
        self._failing_since: float | None = None
        self.lost_reason: str | None = None
        """Why purple counts as gone, once :meth:`ended` said ``lost``."""
        self._last: Task | None = None
        """Purple's A2A task as last read."""

    async def start(self, task: TaskAssignment, description: str) -> None:
        """Hand the task over. The message carries the assignment and nothing else: no metadata,
        so nothing that names the bug (purple keys its logs by the task's context id); the
        request carries the task's W3C ``traceparent`` when green traces (random ids only)."""
        message = new_protocol_message(
            description, task.model_dump(mode="json"), context_id=task.task_id, role=Role.ROLE_USER
        )
        reply = await self._send_with_retry(message, telemetry.traceparent())
        if isinstance(reply, Task):
            self._purple_task_id, self._last = reply.id, reply
            if (
                reply.status.state in _ENDED
                and reply.status.state != TaskState.TASK_STATE_COMPLETED
            ):
                raise PurpleUnreachable(  # it was reached and had the task: not a re-run
                    f"purple ended the task at once: {_ENDED[reply.status.state]}",
                    "purple_refused",
                )
        log.info("purple.started", purple_task=self._purple_task_id, purple_url=self.base_url)

    async def _send_with_retry(self, message: object, headers: dict[str, str]) -> object:
        """Send; while purple cannot be reached, retry with backoff for start_retry_s. Retried:
        a connection refused, and any transport failure while its card is read (a purple killed
        as green calls it drops the connection: the task message cannot have reached it)."""
        give_up, delay = time.monotonic() + self._start_retry_s, 0.5
        while True:
            try:
                return await self._peer.send(message, return_immediately=True, headers=headers)  # type: ignore[arg-type]
            except Exception as exc:  # the SDK wraps transport errors in its own types
                transport = isinstance(exc, httpx.HTTPError | OSError) or isinstance(
                    exc.__cause__, httpx.HTTPError | OSError
                )
                unsent = _not_connected(exc) or (transport and not self._peer.has_card)
                if unsent and time.monotonic() + delay <= give_up:
                    log.warning("purple.start_retry", error=str(exc), retry_in_s=delay)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 8.0)
                    continue
                # The details stay in green's log: what a caller sees does not describe the
                # network beyond "could not be reached" (and green calls only allow-listed URLs).
                log.warning("purple.start_failed", transport_error=transport, error=str(exc))
                if transport:
                    raise PurpleUnreachable(
                        f"purple at {self.base_url} could not be reached"
                    ) from exc
                raise PurpleUnreachable(
                    f"purple at {self.base_url} refused the task", "purple_refused"
                ) from exc

    async def ended(self) -> str | None:
        """None while purple works on the task; otherwise how its A2A task ended, or ``lost``
        (see :attr:`lost_reason`): purple no longer knows the task, or every poll failed for
        ``lost_after_s``.

        A purple that answered with a plain Message (no task to poll) is never 'ended' here;
        green's deadlines still bound it.
        """
        if self._purple_task_id is None:
            return None
        try:
            async with asyncio.timeout(self._poll_timeout):
                task = await self._peer.get_task(self._purple_task_id)
        except TaskNotFoundError as exc:
            self.lost_reason = (
                f"purple at {self.base_url} no longer knows its task (it restarted?): {exc}"
            )
            return "lost"
        except Exception as exc:
            now = time.monotonic()
            self._failing_since = self._failing_since or now
            silent = now - self._failing_since
            log.warning("purple.poll_failed", error=str(exc) or type(exc).__name__)
            if silent >= self._lost_after_s:
                self.lost_reason = (
                    f"purple at {self.base_url} has not answered for {silent:.0f} s: "
                    f"{str(exc) or type(exc).__name__}"
                )
                return "lost"
            return None
        self._failing_since = None
        self._last = task
        return _ENDED.get(task.status.state)

    async def stop(self, grace_s: float = 0.0, timeout: float = 5.0) -> AgentReport | None:
        """The task is over on green's side (for whatever reason): cancel purple's A2A task unless
        it has ended (within ``grace_s``: after an accepted submission purple ends by itself), then
        read purple's final word once. Bounded by ``timeout``; never raises (a purple that does
        not answer only loses its chance to say why)."""
        if self._purple_task_id is None:
            return None
        try:
            async with asyncio.timeout(timeout):
                await self._grace(grace_s)
                if self._last is None or self._last.status.state not in _ENDED:
                    await self._cancel()
                if self._last is None or self._last.status.state not in _ENDED:
                    self._last = await self._peer.get_task(self._purple_task_id)
        except Exception as exc:  # purple gone, slow, or refusing: its report is lost, not green
            log.info("purple.stop_unanswered", error=str(exc) or type(exc).__name__)
        return self.report()

    async def _grace(self, grace_s: float) -> None:
        ends = time.monotonic() + grace_s
        while self._last is not None and self._last.status.state not in _ENDED:
            if time.monotonic() >= ends:
                return
            await asyncio.sleep(0.1)
            self._last = await self._peer.get_task(self._purple_task_id or "")

    async def _cancel(self) -> None:
        try:
            self._last = await self._peer.cancel_task(self._purple_task_id or "")
            log.info("purple.cancelled", purple_task=self._purple_task_id)
        except TaskNotFoundError:
            self._last = None
        except Exception as exc:  # e.g. not cancelable: it ended meanwhile; read it below
            log.info("purple.cancel_refused", error=str(exc) or type(exc).__name__)
            self._last = None

    def report(self) -> AgentReport | None:
        """Purple's own account of how its task ended (its final status message): the
        structured report when it sent one, else its status text as the reason."""
        task = self._last
        if task is None or not task.status.HasField("message"):
            return None
        payload = message_parts(task.status.message)
        if payload.data is not None and payload.data.get("kind") == "agent_report":
            try:
                return AgentReport.model_validate(payload.data)
            except ValidationError as exc:
                log.info("purple.bad_report", error=exc.errors()[0]["msg"])
        text = clip_reason(payload.text)
        return AgentReport(status=_ENDED.get(task.status.state, ""), reason=text) if text else None

    async def aclose(self) -> None:
        await self._peer.aclose()
