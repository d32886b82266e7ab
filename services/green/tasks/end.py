"""How a task's runner ends: exceptions that carry their outcome, and whose failure it was.

Two kinds of exception meet a task (as in mini-swe-agent, which splits terminating from
non-terminating ones):

- **non-terminating**: :class:`~services.green.tasks.live_task.RequestRefused`: one request of the
  agent is refused (bad token, a limit, the task not running); the agent hears why and the task
  goes on;
- **terminating**: :class:`TaskEnd`: the task's runner stops, and the exception says how the
  task ended (status, end reason, whose failure). Green's own exceptions are TaskEnds
  (:class:`GreenFault`; the purple link's ``PurpleUnreachable``); those of the layers below
  (the sandbox, the asset sources, the database), which know nothing of task outcomes, are read
  by :func:`task_end`, the one place of the rule of ``docs/scoring.md``, "Whose failure is it":
  infra only when green can show the agent did not cause it; a failure of green, its database
  or the engine is never the agent's.
"""

from __future__ import annotations

from services.green.kinds.errors import AssetError
from services.green.store.errors import STORAGE_ERRORS, brief
from services.green.store.models import FailureKind, TaskStatus
from services.sandbox.base import AgentFault, SandboxError


class TaskEnd(Exception):
    """Ends a task's runner; the task ends ``failed`` (or ``status``) with this end reason and
    failure kind, the message as its error."""

    def __init__(
        self,
        end_reason: str,
        error: str,
        failure_kind: FailureKind | None,
        status: TaskStatus = TaskStatus.failed,
        *,
        sweep: bool = False,
    ) -> None:
        super().__init__(error)
        self.end_reason = end_reason
        self.failure_kind = failure_kind
        self.status = status
        self.sweep = sweep
        """The engine failed: it may have left a container behind (swept once forgotten)."""


class GreenFault(TaskEnd):
    """Green itself failed while serving the agent (its database): the task ends as infra."""

    def __init__(self, end_reason: str, error: str) -> None:
        super().__init__(end_reason, error, FailureKind.infra)


def task_end(exc: Exception, stage: TaskStatus) -> TaskEnd:
    """The ending an exception raised in ``stage`` (the task's status then) gives the task."""
    match exc:
        case TaskEnd():
            return exc
        case AgentFault():  # the agent's commands ended the container; in preparation: not it
            by = FailureKind.agent if stage is TaskStatus.running else FailureKind.infra
            return TaskEnd(exc.reason, str(exc), by)
        case AssetError():
            return TaskEnd("assets", str(exc), FailureKind.infra)
        case SandboxError():
            return TaskEnd("sandbox", str(exc), FailureKind.infra, sweep=True)
        case _ if isinstance(exc, STORAGE_ERRORS):  # the detail goes to the log only
            return TaskEnd("storage", brief(exc), FailureKind.infra)
        case _:  # a harness bug or a Docker failure: recorded, never swallowed
            return TaskEnd("harness_error", f"{type(exc).__name__}: {exc}", FailureKind.infra)
