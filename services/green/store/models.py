"""SQLModel tables (`task_contexts`: one row per task; `commands`; `assessments`; `instances`) and the API schemas that expose them.

The schema is owned by the migrations in ``migrations/``: a change here needs a revision
(``make migration SERVICE=green MSG=...``; a test fails while the two differ)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import computed_field
from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from services.shared.outcome import FailureKind, TaskStatus
from services.shared.task_ref import TaskRef


def utcnow() -> datetime:
    return datetime.now(UTC)


class TaskBase(SQLModel):
    kind: str = Field(default="arvo", index=True)
    """``arvo`` (root-cause analysis) or ``swebench`` (fix an issue)."""
    ref_id: str = Field(index=True)
    """The task's id within its kind (an ARVO id, a SWE-bench instance id): with ``kind``, the
    task reference ``kind:ref_id``."""
    bug: str = Field(default="", index=True)
    """The bug the task is about, shared by the kinds that ask questions of it (``arvo:10055``
    for ``arvo:10055``, ``arvo-poc:10055-l2`` and ``arvo-fix:10055``): what is disclosed, and
    who may start a task, is decided per bug. Set at intake (``kinds.registry.bug_of``); the
    store gives a row without one its own reference."""
    status: TaskStatus = Field(default=TaskStatus.queued, index=True)
    purple_url: str
    container_name: str | None = None
    workspace_dir: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    updated_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    max_steps: int
    task_timeout_s: float
    command_timeout_s: float
    steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    submissions: int = 0
    end_reason: str | None = None
    error: str | None = None
    failure_kind: FailureKind | None = None
    agent_reason: str | None = None
    """How the agent said it ended, in its own words (purple's final A2A status; at most
    1,000 characters, one line). Shown as the agent's words; never decides ``failure_kind``."""
    assessment_id: str | None = Field(default=None, index=True)
    owner: str = Field(default="green", index=True)
    """The green instance running the task (GREEN_INSTANCE_NAME): after a crash, a restarted
    green fails only its own unfinished tasks, not those of replicas sharing the database."""
    trial: int = Field(default=1, sa_column_kwargs={"server_default": "1"})
    """Which of the task's repeated attempts this is (1..K): each trial is its own task."""


class Task(TaskBase, table=True):
    """One task: its id is also the A2A context id of every message of the task."""

    __tablename__ = "task_contexts"

    @property
    def ref(self) -> TaskRef:
        """The task reference (``arvo:10055``)."""
        return TaskRef(self.kind, self.ref_id)

    id: str = Field(primary_key=True)
    submission: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    scores: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    ground_truth: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    """Never sent to the agent; shown over REST only once the task has ended."""
    provenance: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    """What decides the score: versions, image digest, sha256 of assets and ground truth,
    purple's card, limits (:mod:`services.green.tasks.provenance`)."""
    lease_until: datetime | None = None
    """Until when the owner's hold on this unfinished task lasts; the owner renews it while it
    runs the task. Past it, another replica may take the task over (the owner died)."""
    cancel_requested: bool = Field(default=False, sa_column_kwargs={"server_default": "0"})
    """Set by whichever replica was asked to cancel; the owner polls it and cancels the task."""


class Command(SQLModel, table=True):
    __tablename__ = "commands"

    id: int | None = Field(default=None, primary_key=True)
    task_id: str = Field(foreign_key="task_contexts.id", index=True)
    seq: int
    command: str
    exit_code: int
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    output: str
    """At most the first and last few KiB of what the agent saw."""
    created_at: datetime = Field(default_factory=utcnow)


# ---- API schemas -------------------------------------------------------------------------

Disclosed = Literal["all", "pending", "public"]
"""How much of a task's record a caller is shown (``TaskPublic.disclosed``)."""


class TaskPublic(TaskBase):
    id: str
    submission: dict[str, Any] | None = None
    scores: dict[str, Any] | None = None
    ground_truth: dict[str, Any] | None = None
    provenance: dict[str, Any] | None = None
    verified: bool | None = None
    """What ``arena tasks verify`` found for this task (None: never verified)."""
    disclosed: Disclosed = "all"
    """How much of the record this caller is shown now (:mod:`services.green.edge.disclosure`):
    ``all``; ``pending``: the operator gets the rest once no task of the same bug is unfinished
    (ask again then); ``public``: a caller without the operator token, never more."""
    withheld: list[str] = []
    """The fields of the record not shown to this caller now: ``ground_truth``,
    ``provenance.ground_truth_sha256``, ``scores.<field>`` (the names only)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ref(self) -> str:
        """The task reference, ``kind:ref_id`` (e.g. ``arvo:10055``)."""
        return str(TaskRef(self.kind, self.ref_id))

    @computed_field  # type: ignore[prop-decorator]
    @property
    def instance(self) -> str | None:
        """The replica (GREEN_INSTANCE_NAME) that runs or ran the task; None while queued."""
        return None if self.status is TaskStatus.queued else self.owner

    @computed_field(description="Deprecated alias of ref_id (use ref or kind + ref_id).")  # type: ignore[prop-decorator]
    @property
    def arvo_id(self) -> str:
        """Deprecated alias of ``ref_id``, kept for clients written before task kinds."""
        return self.ref_id


class TaskList(SQLModel):
    items: list[TaskPublic]
    total: int
    offset: int
    limit: int


class CommandPublic(SQLModel):
    seq: int
    command: str
    exit_code: int
    duration_s: float
    timed_out: bool
    truncated: bool
    output: str
    created_at: datetime


class AssessmentRecord(SQLModel, table=True):
    """A batch of tasks against one purple (A2A assessment, POST /assessments, the CLI)."""

    __tablename__ = "assessments"

    id: str = Field(primary_key=True)
    purple_url: str
    owner: str = Field(default="green", index=True)
    """The green instance running it (see Task.owner)."""
    status: TaskStatus = TaskStatus.running
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    request: dict[str, Any] = Field(sa_column=Column(JSON))
    result: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON))
    error: str | None = None


class TaskVerification(SQLModel, table=True):
    """A task certified (or not) by ``arena tasks verify``: one row per task and image digest."""

    __tablename__ = "task_verifications"

    kind: str = Field(default="arvo", primary_key=True)
    ref: str = Field(primary_key=True)
    """The task's id within its kind (the ARVO id)."""
    image_digest: str = Field(primary_key=True)
    """The image's content id (``sha256:...``): a re-pulled, different image is verified anew."""
    image: str
    verified: bool
    reason: str | None = None
    """Why it is not verified (None when it is)."""
    steps: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON))
    """Each check: name, ok, seconds, detail."""
    seconds: float = 0.0
    checked_at: datetime = Field(default_factory=utcnow)


class ImageUse(SQLModel, table=True):
    """When green last used a task image (the disk budget removes the least recently used)."""

    __tablename__ = "image_uses"

    image: str = Field(primary_key=True)
    last_used: datetime = Field(default_factory=utcnow)


class Instance(SQLModel, table=True):
    """A green replica on this database: registered at start, its heartbeat renewed while it
    lives. A name whose heartbeat is fresh is taken: a second replica of that name is refused."""

    __tablename__ = "instances"

    name: str = Field(primary_key=True)
    """GREEN_INSTANCE_NAME (the ``owner`` of its tasks)."""
    url: str
    """Where purple and the other replicas reach it."""
    incarnation: str
    """Random per start: a replica whose name was taken over sees its heartbeat refused."""
    started_at: datetime = Field(default_factory=utcnow)
    heartbeat_at: datetime = Field(default_factory=utcnow)
