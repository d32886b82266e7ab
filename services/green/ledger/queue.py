"""The shared queue of replicas on one database: claim queued tasks, hold and renew leases, take
over the tasks of a replica that died, and cancel requests that any replica can make.

Every operation is one conditional statement, so of replicas racing for the same row exactly one
wins. On PostgreSQL a claim locks its candidate rows with ``FOR UPDATE SKIP LOCKED``: concurrent
claimers take different tasks and never wait for each other. SQLite has one writer at a time, so
the same ``UPDATE … WHERE id IN (SELECT …) AND status = 'queued'`` is atomic there as it stands.

Times are the callers' (``now``, ``until``): give every replica a synchronized clock (NTP), and
keep leases long against the skew (tens of seconds).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.engine import Engine
from sqlmodel import col

from services.green.store.models import Task, TaskStatus, utcnow

HELD = (TaskStatus.preparing, TaskStatus.running, TaskStatus.evaluating)
"""The statuses in which a task is held by its owner under a lease."""
UNFINISHED = (TaskStatus.queued, *HELD)


@dataclass(frozen=True)
class ExpiredLease:
    """A held task whose owner stopped renewing its lease."""

    id: str
    owner: str
    status: TaskStatus
    container_name: str | None
    lease_until: datetime


class TaskQueue:
    """Queue and lease primitives over ``task_contexts`` (``owner`` is the instance name)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def claim(
        self,
        instance: str,
        until: datetime,
        limit: int = 1,
        *,
        kinds: Collection[str] | None = None,
    ) -> list[str]:
        """Take up to ``limit`` of the oldest queued tasks for ``instance``: each becomes
        ``preparing``, owned by ``instance``, leased until ``until``. Returns the ids taken
        (fewer, or none, when the queue holds fewer); no task is ever taken twice."""
        picked = select(Task.id).where(Task.status == TaskStatus.queued)
        if kinds is not None:
            picked = picked.where(col(Task.kind).in_(list(kinds)))
        # A materialized CTE: PostgreSQL evaluates the pick once (a LIMIT subquery inside the
        # UPDATE may be re-run per row and take more than ``limit`` rows).
        picked = (
            picked.order_by(col(Task.created_at), col(Task.id))
            .limit(limit)
            .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has no row locks
            .cte("picked")
            .prefix_with("MATERIALIZED", dialect="postgresql")
        )
        stmt = (
            update(Task)
            .where(col(Task.id).in_(select(picked.c.id)), Task.status == TaskStatus.queued)
            .values(
                status=TaskStatus.preparing, owner=instance, lease_until=until, updated_at=utcnow()
            )
            .returning(Task.id)
        )
        with self.engine.begin() as conn:
            return list(conn.execute(stmt).scalars())

    def release(self, instance: str, task_ids: Collection[str]) -> int:
        """Give back to the queue tasks ``instance`` claimed and never started (it began to stop
        as it claimed them): queued again, with no lease, for any replica. Returns how many."""
        if not task_ids:
            return 0
        stmt = (
            update(Task)
            .where(
                col(Task.id).in_(list(task_ids)),
                Task.owner == instance,
                Task.status == TaskStatus.preparing,
            )
            .values(status=TaskStatus.queued, lease_until=None, updated_at=utcnow())
        )
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount

    def renew(self, instance: str, task_ids: Collection[str], until: datetime) -> set[str]:
        """Extend to ``until`` the lease of those tasks ``instance`` still owns unfinished.
        Returns the ids renewed: a task missing from the answer ended or was taken over, and
        ``instance`` must stop running it."""
        if not task_ids:
            return set()
        stmt = (
            update(Task)
            .where(
                col(Task.id).in_(list(task_ids)),
                Task.owner == instance,
                col(Task.status).in_(HELD),
            )
            .values(lease_until=until)
            .returning(Task.id)
        )
        with self.engine.begin() as conn:
            return set(conn.execute(stmt).scalars())

    def expired(
        self, instance: str, now: datetime, *, running: Collection[str] | None = None
    ) -> list[ExpiredLease]:
        """Held tasks of other instances whose lease ran out before ``now`` (oldest first).
        A task that never had a lease (NULL) is not listed: leases start at claim or renew.
        With ``running`` (the tasks ``instance`` runs or is still ending), ``instance``'s own
        other held tasks are listed too: it lost track of them (a claim whose reading failed)."""
        whose = Task.owner != instance
        if running is not None:
            whose = or_(whose, col(Task.id).not_in(list(running)))
        q = (
            select(Task.id, Task.owner, Task.status, Task.container_name, Task.lease_until)
            .where(
                col(Task.status).in_(HELD),
                whose,
                col(Task.lease_until).is_not(None),
                col(Task.lease_until) < now,
            )
            .order_by(col(Task.lease_until))
        )
        with self.engine.connect() as conn:
            return [ExpiredLease(*row) for row in conn.execute(q).all()]

    def take_over(
        self,
        instance: str,
        task_id: str,
        from_owner: str,
        *,
        now: datetime,
        until: datetime,
        **fields: Any,
    ) -> bool:
        """Make ``instance`` the owner of an expired task of ``from_owner``, leased until
        ``until``, setting ``fields`` too (e.g. ``status``, ``error``, ``failure_kind`` to end it,
        or ``status=TaskStatus.queued`` to put it back) in the same statement. True for the one
        replica that wins; False when the lease was renewed or another replica took it first."""
        stmt = (
            update(Task)
            .where(
                Task.id == task_id,
                Task.owner == from_owner,
                col(Task.status).in_(HELD),
                col(Task.lease_until) < now,
            )
            .values(owner=instance, lease_until=until, updated_at=utcnow(), **fields)
        )
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def cancel_queued(self, task_id: str, reason: str = "cancelled") -> bool:
        """Cancel a task still queued (any replica may): True when it was, and no claim can take
        it any more; False when it was claimed first or is not queued."""
        now = utcnow()
        stmt = (
            update(Task)
            .where(Task.id == task_id, Task.status == TaskStatus.queued)
            .values(status=TaskStatus.cancelled, end_reason=reason, finished_at=now, updated_at=now)
        )
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def request_cancel(self, task_id: str) -> bool:
        """Ask the owner of an unfinished task to cancel it (any replica may ask). True when the
        request is recorded, False when the task has ended or does not exist."""
        stmt = (
            update(Task)
            .where(Task.id == task_id, col(Task.status).in_(UNFINISHED))
            .values(cancel_requested=True, updated_at=utcnow())
        )
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def cancel_requests(self, instance: str) -> list[str]:
        """The unfinished tasks of ``instance`` whose cancel was requested (the owner polls)."""
        q = select(Task.id).where(
            Task.owner == instance,
            col(Task.cancel_requested).is_(True),
            col(Task.status).in_(UNFINISHED),
        )
        with self.engine.connect() as conn:
            return list(conn.execute(q).scalars())
