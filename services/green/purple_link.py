"""Green's side of the conversation with purple: hand over a task, then watch purple's A2A task."""

from __future__ import annotations

import httpx
from a2a.types import Role, Task, TaskState

from services.shared.a2a import A2APeer, new_protocol_message
from services.shared.logging import get_logger
from services.shared.protocol import TaskAssignment

log = get_logger("services.green.purple_link")

_ENDED = {
    TaskState.TASK_STATE_COMPLETED: "completed",
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_CANCELED: "cancelled",
    TaskState.TASK_STATE_REJECTED: "rejected",
}


class PurpleUnreachable(RuntimeError):
    """Purple could not be reached or refused the task."""


class PurpleLink:
    """One task's link to purple. ``start`` does not block for the task: purple acknowledges
    (an A2A task in ``working``) and works in the background; ``ended`` polls that A2A task."""

    def __init__(self, base_url: str, *, timeout: float = 30.0) -> None:
        self.base_url = base_url
        self._peer = A2APeer(base_url, timeout=timeout)
        self._purple_task_id: str | None = None

    async def start(self, task: TaskAssignment, description: str) -> None:
        """Hand the task over. The message carries the assignment and nothing else: no metadata,
        so nothing that names the bug (purple keys its logs by the task's context id)."""
        message = new_protocol_message(
            description, task.model_dump(mode="json"), context_id=task.task_id, role=Role.ROLE_USER
        )
        try:
            reply = await self._peer.send(message, return_immediately=True)
        except Exception as exc:  # the SDK wraps transport errors in its own types
            transport = isinstance(exc, httpx.HTTPError | OSError) or isinstance(
                exc.__cause__, httpx.HTTPError | OSError
            )
            # The detail stays in green's log: a caller-visible error must not tell whether a
            # port is open (the URL is allow-listed anyway).
            log.warning("purple.start_failed", transport_error=transport, error=str(exc))
            raise PurpleUnreachable(
                f"purple at {self.base_url} could not be reached or refused the task"
            ) from exc
        if isinstance(reply, Task):
            self._purple_task_id = reply.id
            if (
                reply.status.state in _ENDED
                and reply.status.state != TaskState.TASK_STATE_COMPLETED
            ):
                raise PurpleUnreachable(
                    f"purple ended the task at once: {_ENDED[reply.status.state]}"
                )
        log.info("purple.started", purple_task=self._purple_task_id, purple_url=self.base_url)

    async def ended(self) -> str | None:
        """None while purple works on the task; otherwise how its A2A task ended.

        A purple that answered with a plain Message (no task to poll) is never 'ended' here;
        green's deadlines still bound it. Poll errors are logged and treated as 'still working'
        until the idle timeout decides.
        """
        if self._purple_task_id is None:
            return None
        try:
            task = await self._peer.get_task(self._purple_task_id)
        except Exception as exc:
            log.warning("purple.poll_failed", error=str(exc))
            return None
        return _ENDED.get(task.status.state)

    async def aclose(self) -> None:
        await self._peer.aclose()
