"""Bounds on the operator plane's intake: requests per credential, tasks waiting at once, the
bugs an anonymous caller may start, and the purple URLs a task may name.

A caller over a bound gets :class:`TooBusy` (429 with ``Retry-After`` over REST, the same code
and sentence over A2A); an anonymous caller (the operator plane open) who names a bug with an
unfinished task gets :class:`BugBusy` (409): while an agent works on a bug, no one but the
operator may start another task of it, or an agent could score its guesses on decoy tasks of its
own bug. Nothing is created.
"""

from __future__ import annotations

import fnmatch
import math
import time
from collections.abc import Awaitable, Callable, Collection

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from services.green.config import GreenSettings
from services.green.edge.auth import Caller
from services.green.kinds.registry import bug_of
from services.shared.task_ref import TaskRef


class TooBusy(Exception):
    """An intake refused by a bound; ``retry_after`` seconds from now it may succeed."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = max(1, retry_after)


class BugBusy(Exception):
    """An anonymous caller named a bug that has an unfinished task: only the operator may start
    another task of it now."""


Bug = str
"""A bug (``arvo:10055``, :func:`services.green.kinds.registry.bug_of`): the tasks of every kind
that asks a question of it share its answer."""


async def _none_busy(bugs: set[Bug]) -> set[Bug]:
    return set()


class IntakeLimits:
    def __init__(
        self,
        *,
        per_minute: int,
        max_queued: int,
        max_batch: int,
        unfinished: Callable[[], int],
        busy: Callable[[set[Bug]], Awaitable[set[Bug]]] = _none_busy,
    ) -> None:
        self._limiter = MovingWindowRateLimiter(MemoryStorage())
        self._rate = RateLimitItemPerMinute(per_minute)
        self.max_queued = max_queued
        self.max_batch = max_batch
        self._unfinished = unfinished
        self._busy = busy
        """Which of these bugs have an unfinished task (any replica's)."""

    async def admit(self, caller: Caller, refs: Collection[TaskRef], trials: int = 1) -> None:
        """Count one intake request of ``caller`` creating ``trials`` tasks of each of ``refs``,
        or refuse it."""
        n_tasks = len(refs) * trials
        if n_tasks > self.max_batch:
            raise ValueError(
                f"{n_tasks} task ids in one request; at most {self.max_batch} "
                "(GREEN_MAX_ASSESSMENT_TASKS)"
            )
        if not self._limiter.hit(self._rate, caller.name):
            reset, _ = self._limiter.get_window_stats(self._rate, caller.name)
            raise TooBusy(
                f"too many requests: at most {self._rate.amount} per minute per credential",
                math.ceil(reset - time.time()),
            )
        # after the rate: the busy-bug question costs a database query, and a caller it
        # refuses still spends its requests
        busy = set() if caller.operator else await self._busy({bug_of(r.kind, r.id) for r in refs})
        if busy:
            named = ", ".join(sorted(busy)[:5])
            raise BugBusy(
                f"a task of {named} is unfinished: until it ends, only the operator may start "
                "another task of the same bug"
            )
        waiting = self._unfinished()
        if waiting + n_tasks > self.max_queued:
            raise TooBusy(
                f"green is full: {waiting} task(s) unfinished, at most {self.max_queued} "
                "(GREEN_MAX_QUEUED_TASKS); try again later",
                30,
            )


def allowed_purple(settings: GreenSettings, requested: str | None) -> str:
    """The purple a task may use: the configured one, or one the allow-list names. Green calls no
    other URL, so a caller cannot make it probe hosts or ports (ValueError, with a sentence)."""
    default = settings.purple_url.rstrip("/")
    url = (requested or default).strip().rstrip("/")
    patterns = [default, *(p.rstrip("/") for p in settings.purple_allowlist)]
    if not any(fnmatch.fnmatchcase(url, p) for p in patterns):
        raise ValueError(
            f"purple_url {url!r} is not allowed: green calls only GREEN_PURPLE_URL and "
            "the URLs in GREEN_PURPLE_ALLOWLIST"
        )
    return url
