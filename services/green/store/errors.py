"""What a failing database looks like to green, and what each side is told about it.

Any SQLAlchemy error is green's own failure (``storage``): a task it interrupts ends as infra, and
the agent is told only :data:`AGENT_SENTENCE` (the detail, which names hosts and drivers, goes to
green's log). The errors that mean "the database is away for now" (refused or dropped
connections, a locked or read-only SQLite file, a full pool, no answer within the deadline) are
:data:`UNREACHABLE`: the API
answers those with 503 and ``Retry-After`` (services/green/api/outage.py).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from sqlalchemy.exc import (
    DisconnectionError,
    InterfaceError,
    OperationalError,
    SQLAlchemyError,
)
from sqlalchemy.exc import TimeoutError as PoolTimeout


class DatabaseUnavailable(SQLAlchemyError):
    """The database did not answer a call within its deadline, or green knows it is away
    (services/green/store/offloop.py)."""

    in_flight: Future[Any] | None = None
    """The call, when it had started before its caller gave up on it: it runs on in its thread
    and may yet land. Whoever would make the same write again waits for it first
    (services/green/ledger/task_writes.py), or the write could land twice, or after a later one."""


STORAGE_ERRORS: tuple[type[BaseException], ...] = (SQLAlchemyError,)
"""Raised by the store when the database fails (any of them is infra, never the agent's)."""

UNREACHABLE: tuple[type[BaseException], ...] = (
    OperationalError,
    InterfaceError,
    DisconnectionError,
    PoolTimeout,
    DatabaseUnavailable,
)
"""The database is away (or locked) for now: try again later."""

AGENT_SENTENCE = "the arena had an internal error; this is not your fault"
"""All the agent learns of a storage error while green serves its request."""

OPERATOR_SENTENCE = "green's database is unreachable; try again shortly"
"""What an API caller is told (503) while the database is away."""

RETRY_AFTER_S = 5
"""The ``Retry-After`` of a 503 during an outage."""


def brief(exc: BaseException) -> str:
    """One line naming the error for a task's record (the full text goes to the log)."""
    orig = getattr(exc, "orig", None)
    kind = type(orig).__name__ if orig is not None else type(exc).__name__
    return f"green's database failed ({kind})"
