"""How a task ended: the one record of a finished task, for green's lifecycle, its assessments, the
kinds' aggregates, the dashboard and the ``arena`` client's results (which adds what it saved
beside it: :class:`services.arena.results.RunOutcome`).

Green's orchestrator fills the ending (status, end reason, error, whose failure, scores) and writes
it to its store; :meth:`TaskOutcome.of` reads the whole record (with the counters) back from a
stored task, :meth:`TaskOutcome.from_record` from a task's JSON. Its JSON is a task's entry in an
assessment's result.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, computed_field, model_validator

from services.shared.task_ref import DEFAULT_KIND, TaskRef


class TaskStatus(enum.StrEnum):
    queued = "queued"
    preparing = "preparing"
    running = "running"
    evaluating = "evaluating"
    completed = "completed"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in (TaskStatus.completed, TaskStatus.failed, TaskStatus.cancelled)


class FailureKind(enum.StrEnum):
    infra = "infra"
    """The harness failed (assets, Docker, green itself): not the agent's fault."""
    agent = "agent"
    """The agent failed (unreachable, no valid submission, limits)."""


class StoredTask(Protocol):
    """What :meth:`TaskOutcome.of` reads of a stored task (green's ``Task`` row)."""

    id: str
    kind: str
    ref_id: str
    status: TaskStatus
    end_reason: str | None
    failure_kind: FailureKind | None
    error: str | None
    steps: int
    tokens_in: int
    tokens_out: int
    cost: float
    started_at: datetime | None
    finished_at: datetime | None
    scores: dict[str, Any] | None


class TaskOutcome(BaseModel):
    """One task's ending and what it cost."""

    task_id: str | None = None
    kind: str = DEFAULT_KIND
    ref_id: str | None = None
    """The task's id within its kind (with ``kind``: the reference ``kind:ref_id``)."""
    trial: int = 1
    """Which of the task's repeated attempts this is (1..K; aggregates average a task's
    trials first)."""
    status: TaskStatus
    end_reason: str | None = None
    failure_kind: FailureKind | None = None
    """Required for a failed task: ``infra`` (the harness) or ``agent``."""
    error: str | None = None
    steps: int = 0
    """Commands the agent ran."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    duration_s: float | None = None
    scores: dict[str, Any] | None = None
    """The kind's scores (for ARVO a ``TaskScore`` dict; failures carry zeros, explained)."""

    @model_validator(mode="before")
    @classmethod
    def _read_ref(cls, data: Any) -> Any:
        """The reference from ``ref`` (``swebench:x``, the canonical form green answers with),
        else ``kind`` + ``ref_id``, else, in records written before task kinds, the deprecated
        ``arvo_id`` (an id of the default kind)."""
        if not isinstance(data, dict):
            return data
        if data.get("ref"):
            try:
                ref = TaskRef.parse(data["ref"])
            except ValueError:
                pass
            else:
                return {**data, "kind": ref.kind, "ref_id": ref.id}
        if not data.get("ref_id") and data.get("arvo_id") not in (None, ""):
            return {**data, "ref_id": str(data["arvo_id"])}
        return data

    @model_validator(mode="after")
    def _kind_for_failures(self) -> TaskOutcome:
        if self.status is TaskStatus.failed and self.failure_kind is None:
            raise ValueError("a failed task needs failure_kind 'infra' or 'agent'")
        return self

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ref(self) -> str | None:
        """The task reference (``arvo:10055``)."""
        return str(self.task_ref) if self.ref_id else None

    @property
    def task_ref(self) -> TaskRef:
        """The task reference as a :class:`TaskRef` (ValueError without ``ref_id``)."""
        if not self.ref_id:
            raise ValueError(f"task {self.task_id} has no reference")
        return TaskRef(self.kind, self.ref_id)

    @computed_field(description="Deprecated alias of ref_id (use ref).")  # type: ignore[prop-decorator]
    @property
    def arvo_id(self) -> str | None:
        """Deprecated alias of ``ref_id``, kept for clients written before task kinds (read
        back too: :meth:`_read_ref`)."""
        return self.ref_id

    @classmethod
    def of(cls, t: StoredTask) -> TaskOutcome:
        """The outcome recorded for a stored task (a failed task without a failure kind, from
        an older database, counts as an infra failure)."""
        duration = (
            (t.finished_at - t.started_at).total_seconds()
            if t.finished_at and t.started_at
            else None
        )
        failure_kind = t.failure_kind
        if t.status is TaskStatus.failed and failure_kind is None:
            failure_kind = FailureKind.infra
        return cls(
            task_id=t.id,
            kind=t.kind,
            ref_id=t.ref_id,
            trial=getattr(t, "trial", None) or 1,
            status=t.status,
            end_reason=t.end_reason,
            failure_kind=failure_kind,
            error=t.error,
            steps=t.steps,
            tokens_in=t.tokens_in,
            tokens_out=t.tokens_out,
            cost=t.cost,
            duration_s=duration,
            scores=t.scores,
        )

    @classmethod
    def from_record(cls, r: dict[str, Any]) -> TaskOutcome:
        """From a plain record (green's task JSON, the CLI's results.json): a failed record
        without a failure kind counts as an infra failure."""
        status = str(r["status"])
        keep = ("task_id", "kind", "ref", "ref_id", "arvo_id", "trial", "end_reason", "error")
        data = {k: r[k] for k in keep if r.get(k)}
        failure_kind = r.get("failure_kind") or ("infra" if status == "failed" else None)
        return cls.model_validate(
            {**data, "status": status, "failure_kind": failure_kind, "scores": r.get("scores")}
        )
