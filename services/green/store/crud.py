"""The queries. Every write commits at once, so a SQLite shell shows the truth mid-task."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Row, bindparam, false, insert
from sqlalchemy.engine import Engine
from sqlalchemy.orm import defer
from sqlmodel import Session, col, func, select, update

from services.green.store.models import (
    AssessmentRecord,
    Command,
    ImageUse,
    Task,
    TaskStatus,
    TaskVerification,
    utcnow,
)

UNFINISHED = (TaskStatus.queued, TaskStatus.preparing, TaskStatus.running, TaskStatus.evaluating)


_HELD = (TaskStatus.preparing, TaskStatus.running, TaskStatus.evaluating)
"""What a task's owner may still write over (a claim makes it ``preparing``)."""


_INSERT_COMMAND = insert(Command)
_PROBE = update(Task).where(false()).values(updated_at=Task.updated_at)
_COUNT_STEPS = (
    update(Task)
    .where(col(Task.id) == bindparam("task_id"))
    .values(steps=bindparam("steps"), updated_at=bindparam("now"))
)


def storable(values: dict[str, Any]) -> dict[str, Any]:
    """``values`` with every NUL in their text replaced by U+FFFD (as undecodable output bytes
    already are): PostgreSQL refuses a NUL in a text column, and what the agent sends or prints
    (a command, its output, its reason) must never fail green's write, which would make the
    agent's act an infra failure."""
    return {
        k: v.replace("\x00", "\ufffd") if isinstance(v, str) and "\x00" in v else v
        for k, v in values.items()
    }


def _with_bug(task: Task) -> Task:
    """``task`` with its bug set: its own reference when intake named none."""
    if not task.bug:
        task.bug = f"{task.kind}:{task.ref_id}"
    return task


class TaskStore:
    """Thin synchronous repository. The event loop never calls it itself: it awaits
    ``Database.run`` (:mod:`.offloop`), which runs each call in a thread under a deadline."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, task: Task) -> Task:
        with Session(self.engine) as s:
            s.add(_with_bug(task))
            s.commit()
            s.refresh(task)
            return task

    def add_all(self, tasks: Collection[Task]) -> None:
        """Insert these tasks in one transaction: all or none. Each is read back as the
        database keeps it, in one query before the commit (not one per task after it: each is
        a round trip, and a connection checked out again)."""
        with Session(self.engine, expire_on_commit=False) as s:
            s.add_all([_with_bug(t) for t in tasks])
            s.flush()
            ids = [t.id for t in tasks]
            stored = select(Task).where(col(Task.id).in_(ids))
            s.exec(stored.execution_options(populate_existing=True)).all()
            s.commit()

    def get(self, task_id: str) -> Task | None:
        with Session(self.engine) as s:
            return s.get(Task, task_id)

    def update(self, task_id: str, **fields: Any) -> Task:
        with Session(self.engine) as s:
            task = s.get(Task, task_id)
            if task is None:
                raise KeyError(task_id)
            for k, v in fields.items():
                setattr(task, k, v)
            task.updated_at = utcnow()
            s.add(task)
            s.commit()
            s.refresh(task)
            return task

    def update_held(self, task_id: str, owner: str, **fields: Any) -> bool:
        """Write ``fields`` on a task only while ``owner`` holds it unfinished, in one conditional
        UPDATE: False, and nothing written, when it has ended or another replica took it over."""
        stmt = (
            update(Task)
            .where(
                col(Task.id) == task_id,
                col(Task.owner) == owner,
                col(Task.status).in_(_HELD),
            )
            .values(updated_at=utcnow(), **storable(fields))
        )
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def list(
        self,
        *,
        status: TaskStatus | None = None,
        kind: str | None = None,
        ref_id: str | None = None,
        assessment_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[Sequence[Task], int]:
        with Session(self.engine) as s:
            q = select(Task)
            if status is not None:
                q = q.where(Task.status == status)
            if kind is not None:
                q = q.where(Task.kind == kind)
            if ref_id is not None:
                q = q.where(Task.ref_id == ref_id)
            if assessment_id is not None:
                q = q.where(Task.assessment_id == assessment_id)
            total = s.exec(select(func.count()).select_from(q.subquery())).one()
            rows = s.exec(q.order_by(Task.created_at.desc()).offset(offset).limit(limit)).all()
            return rows, total

    def get_many(self, task_ids: Collection[str]) -> list[Task]:
        """The tasks with these ids that exist, in one query."""
        if not task_ids:
            return []
        with Session(self.engine) as s:
            return list(s.exec(select(Task).where(col(Task.id).in_(list(task_ids)))).all())

    def unfinished_bugs(self, bugs: set[str]) -> set[str]:
        """Which of these bugs (``Task.bug``: ``arvo:10055``) have a task not yet ended, of any
        kind and on any replica."""
        if not bugs:
            return set()
        with Session(self.engine) as s:
            q = select(Task.bug).where(Task.status.in_(UNFINISHED), col(Task.bug).in_(bugs))
            return set(s.exec(q.distinct()).all())

    def count_unfinished(self) -> int:
        with Session(self.engine) as s:
            q = select(func.count()).select_from(Task).where(Task.status.in_(UNFINISHED))
            return s.exec(q).one()

    LIST_COLUMNS = (
        "id", "kind", "ref_id", "status", "purple_url", "created_at", "started_at",
        "finished_at", "steps", "max_steps", "cost", "end_reason", "error", "failure_kind",
        "assessment_id", "scores", "owner", "trial",
    )  # fmt: skip
    """What a task list shows: never the ground truth or the submission (large, and secret)."""

    def page(
        self,
        *,
        statuses: Collection[TaskStatus] = (),
        kind: str | None = None,
        ref_ids: Collection[str] | None = None,
        assessment_id: str | None = None,
        offset: int = 0,
        limit: int = 50,
    ) -> tuple[Sequence[Row[Any]], int]:
        """One page of tasks, newest first, and the total matching: rows of :attr:`LIST_COLUMNS`.

        ``ref_ids`` restricts to those ids (an empty collection matches nothing);
        ``assessment_id=""`` selects the tasks that belong to no assessment."""
        where = []
        if statuses:
            where.append(col(Task.status).in_(list(statuses)))
        if kind:
            where.append(Task.kind == kind)
        if ref_ids is not None:
            where.append(col(Task.ref_id).in_(list(ref_ids)))
        if assessment_id == "":
            where.append(col(Task.assessment_id).is_(None))
        elif assessment_id is not None:
            where.append(Task.assessment_id == assessment_id)
        columns = [getattr(Task, c) for c in self.LIST_COLUMNS]
        with Session(self.engine) as s:
            total = s.exec(select(func.count()).select_from(Task).where(*where)).one()
            q = select(*columns).where(*where).order_by(col(Task.created_at).desc())
            return s.exec(q.offset(offset).limit(limit)).all(), total

    def run_tasks(
        self, assessment_id: str, limit: int = 5000, *, ground_truth: bool = True
    ) -> Sequence[Task]:
        """The tasks of one assessment (``""``: the tasks of none), oldest first. With
        ``ground_truth=False`` that column is not loaded (reading it then raises)."""
        where = (
            col(Task.assessment_id).is_(None)
            if assessment_id == ""
            else Task.assessment_id == assessment_id
        )
        with Session(self.engine) as s:
            q = select(Task).where(where).order_by(col(Task.created_at)).limit(limit)
            if not ground_truth:
                q = q.options(defer(Task.ground_truth, raiseload=True))  # type: ignore[arg-type]
            return s.exec(q).all()

    def run_counts(self, assessment_id: str) -> list[tuple[TaskStatus, str | None, int, float]]:
        """(status, failure kind, tasks, cost) of one assessment's tasks (``""``: of none)."""
        where = (
            col(Task.assessment_id).is_(None)
            if assessment_id == ""
            else Task.assessment_id == assessment_id
        )
        q = (
            select(
                Task.status, Task.failure_kind, func.count(), func.coalesce(func.sum(Task.cost), 0)
            )
            .where(where)
            .group_by(Task.status, Task.failure_kind)
        )
        with Session(self.engine) as s:
            return [(TaskStatus(a), b, int(n), float(c)) for a, b, n, c in s.exec(q).all()]

    def distinct_ids(self) -> list[tuple[str, str]]:
        """Every (kind, id) that has a task."""
        with Session(self.engine) as s:
            return [tuple(r) for r in s.exec(select(Task.kind, Task.ref_id).distinct()).all()]

    def commands_after(self, task_id: str, after_seq: int, limit: int = 500) -> Sequence[Command]:
        """The commands of a task with ``seq > after_seq``, in order (what a live view lacks)."""
        with Session(self.engine) as s:
            q = select(Command).where(Command.task_id == task_id, Command.seq > after_seq)
            return s.exec(q.order_by(Command.seq).limit(limit)).all()

    def add_command(self, command: Command) -> None:
        """Record a command and the task's step count in one transaction (the inner loop: two
        cached Core statements, no ORM unit of work; ``command`` is left as it was given)."""
        row = command.model_dump(exclude={"id"} if command.id is None else set())
        with self.engine.begin() as conn:
            conn.execute(_INSERT_COMMAND, storable(row))
            conn.execute(
                _COUNT_STEPS,
                {"task_id": command.task_id, "steps": command.seq, "now": utcnow()},
            )

    def commands(self, task_id: str, offset: int = 0, limit: int = 500) -> Sequence[Command]:
        with Session(self.engine) as s:
            q = select(Command).where(Command.task_id == task_id).order_by(Command.seq)
            return s.exec(q.offset(offset).limit(limit)).all()

    def fail_unfinished(self, reason: str, owner: str) -> list[str]:
        """Mark the tasks an earlier process of ``owner`` held (claimed, and not ended) as
        failed; return their ids. The tasks it took in and never started stay in the queue: they
        belong to no replica yet."""
        with Session(self.engine) as s:
            q = select(Task).where(Task.status.in_(_HELD), Task.owner == owner)
            rows = s.exec(q).all()
            now = utcnow()
            for t in rows:
                t.status = TaskStatus.failed
                t.error = reason
                t.end_reason = "interrupted"
                t.failure_kind = "infra"
                t.finished_at = now
                t.updated_at = now
                s.add(t)
            s.commit()
            return [t.id for t in rows]

    def probe(self) -> None:
        """A write that changes nothing: it waits for another writer's lock (SQLite's, a
        PostgreSQL table lock) as a real write would, then fails after the deadline. The
        database's health check."""
        with self.engine.begin() as conn:
            conn.execute(_PROBE)


class AssessmentStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def add(self, record: AssessmentRecord) -> AssessmentRecord:
        with Session(self.engine) as s:
            s.add(record)
            s.commit()
            s.refresh(record)
            return record

    def get(self, assessment_id: str) -> AssessmentRecord | None:
        with Session(self.engine) as s:
            return s.get(AssessmentRecord, assessment_id)

    def update(self, assessment_id: str, **fields: Any) -> None:
        with Session(self.engine) as s:
            rec = s.get(AssessmentRecord, assessment_id)
            if rec is None:
                raise KeyError(assessment_id)
            for k, v in fields.items():
                setattr(rec, k, v)
            s.add(rec)
            s.commit()

    def list(self, offset: int = 0, limit: int = 50) -> tuple[Sequence[AssessmentRecord], int]:
        """A page of assessments, newest first, and how many there are."""
        with Session(self.engine) as s:
            total = s.exec(select(func.count()).select_from(AssessmentRecord)).one()
            q = select(AssessmentRecord).order_by(col(AssessmentRecord.created_at).desc())
            return s.exec(q.offset(offset).limit(limit)).all(), total

    def fail_unfinished(self, reason: str, owner: str) -> None:
        with Session(self.engine) as s:
            q = select(AssessmentRecord).where(
                AssessmentRecord.status == TaskStatus.running, AssessmentRecord.owner == owner
            )
            for rec in s.exec(q):
                rec.status, rec.error, rec.finished_at = TaskStatus.failed, reason, utcnow()
                s.add(rec)
            s.commit()


class VerificationStore:
    """Results of ``arena tasks verify``, keyed by (kind, ref, image digest)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def put(self, row: TaskVerification) -> TaskVerification:
        """Insert or replace the result for this task and image digest."""
        with Session(self.engine) as s:
            row = s.merge(row)
            s.commit()
            s.refresh(row)
            return row

    def latest(self, refs: set[str], kind: str) -> dict[str, TaskVerification]:
        """The newest result of each id of ``kind`` that has one (whatever the image digest)."""
        if not refs:
            return {}
        with Session(self.engine) as s:
            q = select(TaskVerification).where(
                TaskVerification.kind == kind, TaskVerification.ref.in_(refs)
            )
            out: dict[str, TaskVerification] = {}
            for row in s.exec(q.order_by(TaskVerification.checked_at)):
                out[row.ref] = row
            return out

    def get(self, ref: str, image_digest: str, kind: str) -> TaskVerification | None:
        with Session(self.engine) as s:
            return s.get(TaskVerification, (kind, ref, image_digest))


class ImageUseStore:
    """When each task image was last used (for the disk budget's least-recently-used order)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def touch(self, image: str) -> None:
        with Session(self.engine) as s:
            s.merge(ImageUse(image=image, last_used=utcnow()))
            s.commit()

    def last_used(self) -> dict[str, Any]:
        """image -> datetime of its last use (images never used are absent)."""
        with Session(self.engine) as s:
            return {u.image: u.last_used for u in s.exec(select(ImageUse)).all()}

    def forget(self, image: str) -> None:
        with Session(self.engine) as s:
            row = s.get(ImageUse, image)
            if row is not None:
                s.delete(row)
                s.commit()

    def unfinished_images(self, kind: str, template: str) -> set[str]:
        """Images (``template`` with each id) of the tasks of ``kind`` queued or running (any
        replica's): never removed."""
        with Session(self.engine) as s:
            q = select(Task.ref_id).where(Task.status.in_(UNFINISHED), Task.kind == kind)
            return {template.format(id=ref) for ref in s.exec(q.distinct()).all()}
