"""Background removal of task containers that could not be removed when their task ended.

When the engine is unreachable (restarting, a proxy down, overloaded) or jammed on one
container (its removal hangs), ``Sandbox.remove`` fails. The task still ends (its record must not
wait for the engine), its slot is free, and the container no longer takes a slot of its engine
(``SandboxProvider.set_aside``): it is handed to the :class:`Janitor`, whose asyncio task
retries its removal, with a backoff that doubles from ``retry_s`` up to :data:`RETRY_MAX_S`, so
a container the engine cannot remove for an hour costs an attempt a minute, not a core. After
any failure it also sweeps: containers labelled as this green's whose task is no longer live
(created while the engine's answer was lost, say) are removed. :attr:`Janitor.pending` is what
the operator sees in ``/healthz``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from services.sandbox.base import Sandbox, SandboxError, SandboxProvider
from services.shared.logging import get_logger

log = get_logger("services.sandbox.janitor")

RETRY_MAX_S = 60.0
"""The longest wait between two attempts to remove the same container."""


@dataclass
class _Removal:
    sandbox: Sandbox
    wait_s: float
    due: float = 0.0
    """When the next attempt is due (monotonic seconds)."""


class Janitor:
    """Retries removals until they succeed. Runs on the event loop; ``is_live(task_id)`` tells
    which labelled containers still belong to a running task and must be left alone."""

    def __init__(
        self, provider: SandboxProvider, is_live: Callable[[str], bool], retry_s: float
    ) -> None:
        self._provider = provider
        self._is_live = is_live
        self._retry_s = retry_s
        self._pending: list[_Removal] = []
        self._sweep = 0
        """Sweeps asked for since the last one that succeeded."""
        self._wake = asyncio.Event()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None
        provider.hear_unremoved(self.remove_later)  # a judging container's too, say

    def remove_later(self, sandbox: Sandbox) -> None:
        """Keep trying to remove ``sandbox`` (it takes no engine slot meanwhile); a sweep for
        orphans follows. A sandbox already waiting is not added twice."""
        self._provider.set_aside(sandbox)
        if any(r.sandbox is sandbox for r in self._pending):
            return
        self._pending.append(_Removal(sandbox, self._retry_s))
        self._sweep += 1
        self._ensure_task()

    def sweep_soon(self) -> None:
        """The engine failed somewhere: look for orphaned containers until a sweep succeeds."""
        self._sweep += 1
        self._ensure_task()

    @property
    def pending(self) -> list[str]:
        """Names of containers still waiting to be removed."""
        return [r.sandbox.name for r in self._pending]

    def pending_of(self, purpose: str) -> list[str]:
        """Those of them whose spec's ``arena.purpose`` label is ``purpose`` (``judge``: the
        judging containers)."""
        return [
            r.sandbox.name
            for r in self._pending
            if (getattr(getattr(r.sandbox, "spec", None), "labels", None) or {}).get(
                "arena.purpose"
            )
            == purpose
        ]

    def busy(self) -> bool:
        return bool(self._pending) or self._sweep > 0

    async def close(self) -> None:
        """Stop the background task, then one last attempt at every removal (what is left is
        reaped at the next start)."""
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for removal in self._pending:
            removal.due = 0.0
        await self.run_once()

    def _ensure_task(self) -> None:
        self._wake.set()
        if (self._task is None or self._task.done()) and not self._stopped:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="janitor")

    async def _loop(self) -> None:
        while not self._stopped and self.busy():
            self._wake.clear()
            if not await self.run_once():
                due = min((r.due for r in self._pending), default=0.0) - time.monotonic()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(max(due, self._retry_s)):
                        await self._wake.wait()

    async def run_once(self) -> bool:
        """One attempt at each removal that is due and, when due, a sweep. True when all done."""
        now, sweep = time.monotonic(), self._sweep
        due = [r for r in self._pending if r.due <= now]
        removed = await asyncio.gather(*(self._attempt(r) for r in due))
        done = [r for r, ok in zip(due, removed, strict=True) if ok]
        swept = False
        if sweep and len(done) == len(self._pending):
            try:
                names = await self._provider.reap(keep=self._is_live)
                swept = True
                if names:
                    log.info("janitor.swept", containers=names)
            except SandboxError as exc:
                log.warning("janitor.sweep_failed", error=str(exc))
        self._pending = [r for r in self._pending if r not in done]
        if swept and self._sweep == sweep:
            self._sweep = 0
        return not self._pending and not self._sweep

    async def _attempt(self, removal: _Removal) -> bool:
        name = removal.sandbox.name
        try:
            await removal.sandbox.remove()
        except SandboxError as exc:  # logged once, not at every attempt
            if removal.wait_s == self._retry_s:
                log.warning("janitor.remove_failed", container=name, error=str(exc))
            removal.due = time.monotonic() + removal.wait_s
            removal.wait_s = min(removal.wait_s * 2, RETRY_MAX_S)
            return False
        log.info("janitor.removed", container=name)
        return True
