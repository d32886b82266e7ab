"""Background removal of task containers that could not be removed when their task ended.

When the engine is unreachable (restarting, a proxy down, overloaded), ``Sandbox.remove``
fails. The task still ends (its record must not wait for the engine); its container is
handed to the :class:`Janitor`, whose asyncio task retries every ``retry_s`` seconds until the
engine confirms it gone. After any failure it also sweeps: containers labelled as this green's
whose task is no longer live (created while the engine's answer was lost, say) are removed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from services.sandbox.base import Sandbox, SandboxError, SandboxProvider
from services.shared.logging import get_logger

log = get_logger("services.sandbox.janitor")


class Janitor:
    """Retries removals until they succeed. Runs on the event loop; ``is_live(task_id)`` tells
    which labelled containers still belong to a running task and must be left alone."""

    def __init__(
        self, provider: SandboxProvider, is_live: Callable[[str], bool], retry_s: float
    ) -> None:
        self._provider = provider
        self._is_live = is_live
        self._retry_s = retry_s
        self._pending: list[Sandbox] = []
        self._warned: set[str] = set()
        self._sweep = 0
        """Sweeps asked for since the last one that succeeded."""
        self._wake = asyncio.Event()
        self._stopped = False
        self._task: asyncio.Task[None] | None = None

    def remove_later(self, sandbox: Sandbox) -> None:
        """Keep trying to remove ``sandbox``; a sweep for orphans follows."""
        self._pending.append(sandbox)
        self._sweep += 1
        self._ensure_task()

    def sweep_soon(self) -> None:
        """The engine failed somewhere: look for orphaned containers until a sweep succeeds."""
        self._sweep += 1
        self._ensure_task()

    @property
    def pending(self) -> list[str]:
        """Names of containers still waiting to be removed."""
        return [s.name for s in self._pending]

    def busy(self) -> bool:
        return bool(self._pending) or self._sweep > 0

    async def close(self) -> None:
        """Stop the background task, then one last attempt (what is left is reaped at the
        next start)."""
        self._stopped = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.run_once()

    def _ensure_task(self) -> None:
        self._wake.set()
        if (self._task is None or self._task.done()) and not self._stopped:
            self._task = asyncio.get_running_loop().create_task(self._loop(), name="janitor")

    async def _loop(self) -> None:
        while not self._stopped and self.busy():
            self._wake.clear()
            if not await self.run_once():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._retry_s):
                        await self._wake.wait()

    async def run_once(self) -> bool:
        """One pass over the pending removals and, when due, a sweep. True when all done."""
        pending, sweep = list(self._pending), self._sweep
        removed = []
        for sandbox in pending:
            try:
                await sandbox.remove()
                removed.append(sandbox)
                self._warned.discard(sandbox.name)
                log.info("janitor.removed", container=sandbox.name)
            except SandboxError as exc:  # logged once per container, not at every retry
                if sandbox.name not in self._warned:
                    self._warned.add(sandbox.name)
                    log.warning("janitor.remove_failed", container=sandbox.name, error=str(exc))
        swept = False
        if sweep and len(removed) == len(pending):
            try:
                names = await self._provider.reap(keep=self._is_live)
                swept = True
                if names:
                    log.info("janitor.swept", containers=names)
            except SandboxError as exc:
                log.warning("janitor.sweep_failed", error=str(exc))
        self._pending = [s for s in self._pending if s not in removed]
        if swept and self._sweep == sweep:
            self._sweep = 0
        return not self._pending and not self._sweep
