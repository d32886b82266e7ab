"""The registry of green replicas on one database: register at start (refusing a name a live
replica holds), heartbeat while alive, list the live ones, deregister at a clean stop."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col

from services.green.store.models import Instance


class InstanceClash(RuntimeError):
    """Another live replica already uses this instance name."""


class InstanceRegistry:
    """Rows of ``instances``; ``stale_after`` is how old a heartbeat may be for a live replica
    (use the task lease: a replica that stops heartbeating is dead when its leases are)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def register(self, name: str, url: str, *, now: datetime, stale_after: timedelta) -> Instance:
        """Claim ``name`` for this process. Raises :class:`InstanceClash` when a replica of that
        name heartbeated within ``stale_after``; takes the name over when its holder is dead.
        Of replicas registering one name at once, exactly one succeeds."""
        row = Instance(
            name=name, url=url, incarnation=uuid.uuid4().hex, started_at=now, heartbeat_at=now
        )
        values = row.model_dump()
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(Instance).values(**values))
            return row
        except IntegrityError:
            pass  # the name is known: take it over only if its holder stopped heartbeating
        stale = (
            update(Instance)
            .where(Instance.name == name, col(Instance.heartbeat_at) < now - stale_after)
            .values(**{k: v for k, v in values.items() if k != "name"})
        )
        with self.engine.begin() as conn:
            if conn.execute(stale).rowcount == 1:
                return row
            holder = conn.execute(select(Instance).where(Instance.name == name)).first()
        seen = f" (at {holder.url}, heartbeat {holder.heartbeat_at})" if holder else ""
        raise InstanceClash(
            f"another green replica named {name!r} is alive{seen}: give each replica its own "
            "GREEN_INSTANCE_NAME"
        )

    def heartbeat(self, name: str, incarnation: str, now: datetime) -> bool:
        """Renew this replica's heartbeat. False when its name was taken over (it was thought
        dead): the replica must stop working on the database."""
        stmt = (
            update(Instance)
            .where(Instance.name == name, Instance.incarnation == incarnation)
            .values(heartbeat_at=now)
        )
        with self.engine.begin() as conn:
            return conn.execute(stmt).rowcount == 1

    def live(self, now: datetime, stale_after: timedelta) -> list[Instance]:
        """The replicas whose heartbeat is within ``stale_after`` of ``now``, by name."""
        q = (
            select(Instance)
            .where(col(Instance.heartbeat_at) >= now - stale_after)
            .order_by(col(Instance.name))
        )
        with self.engine.connect() as conn:
            return [Instance.model_validate(r._mapping) for r in conn.execute(q).all()]

    def deregister(self, name: str, incarnation: str) -> None:
        """Free the name at a clean stop (only this incarnation's row)."""
        stmt = delete(Instance).where(Instance.name == name, Instance.incarnation == incarnation)
        with self.engine.begin() as conn:
            conn.execute(stmt)
