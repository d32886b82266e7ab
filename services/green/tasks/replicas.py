"""This green as one replica of many on one database: its name, the queue, leases, cancels.

- **Name.** At start the replica registers ``GREEN_INSTANCE_NAME``; a name a live replica holds
  is refused (:class:`InstanceClash`, green exits). A holder whose heartbeat is fresh but whose
  URL no longer answers as that name died a moment ago (a restart under a fixed name): its
  registration is taken over. The heartbeat is renewed with the leases; a clean stop frees it.
- **Dispatcher.** While it has room (a free slot of ``GREEN_MAX_CONCURRENT_TASKS``, and fewer
  tasks starting than its engines admit: ``Orchestrator.room``) the replica claims the oldest
  queued tasks of the kinds it serves (``SELECT … FOR UPDATE SKIP LOCKED``) and runs them; a
  task posted to it, a task that started or a slot freed wakes it at once, else it looks every
  ``GREEN_QUEUE_POLL_S``.
- **Leases.** Every third of ``GREEN_LEASE_S`` the replica renews the leases of the tasks it
  runs; a task missing from the answer is no longer its own (another replica ended it) and is
  stopped without writing its end.
- **Dead replicas.** Every ``GREEN_QUEUE_POLL_S`` the replica looks for other replicas' expired
  leases, takes each such task over ending it ``failed``/infra (``replica_lost``), and removes
  its containers by their task-id label. Ending, not re-queuing: see docs/scale.md. Its own
  held tasks that it neither runs nor is still ending (a claim made just before the database
  failed) are ended the same way once their lease runs out.
- **Database outages.** A task whose end could not be written is forgotten at once (its slot is
  free, its lease no longer renewed) and the end is retried until it lands
  (:mod:`services.green.tasks.endings`); if another replica's takeover comes first, that is its end.
- **Cancels.** Every ``GREEN_QUEUE_POLL_S`` it cancels its tasks whose cancel another replica
  requested, and tells listeners of tasks it does not run what the store shows.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import timedelta

import httpx

from services.green.ledger.instances import InstanceClash, InstanceRegistry
from services.green.store.errors import UNREACHABLE
from services.green.store.models import FailureKind, TaskStatus, utcnow
from services.green.tasks.orchestrator import Orchestrator
from services.shared.aio import cancel_and_wait
from services.shared.http import async_client
from services.shared.logging import get_logger
from services.shared.memory import Trimmer

log = get_logger("services.green.tasks.replicas")

__all__ = ["InstanceClash", "Replica"]


class Replica:
    """The background work that makes one green a replica (started by the app's lifespan)."""

    def __init__(self, orch: Orchestrator) -> None:
        self.orch = orch
        self.settings = s = orch.settings
        self.name = s.instance_name
        self.url = s.reachable_url()
        self.lease = timedelta(seconds=s.lease_s)
        self.registry = InstanceRegistry(orch.store.engine)
        self.incarnation: str | None = None
        self._to_remove: set[str] = set()
        """Tasks taken over whose containers could not be removed yet (retried every round)."""
        self._loops: list[asyncio.Task[None]] = []
        self._closing = False
        self._trimmer = Trimmer()

    # ---- the name ----------------------------------------------------------------------

    async def register(self) -> None:
        """Claim this replica's name; raises InstanceClash when a live replica holds it."""
        now = utcnow()
        try:
            row = await self.orch.db.run_behind(
                self.registry.register, self.name, self.url, now=now, stale_after=self.lease
            )
        except InstanceClash:
            live = await self.orch.db.run_behind(self.registry.live, now, self.lease)
            holder = next((i for i in live if i.name == self.name), None)
            # at our own URL nobody else answers: this process holds its socket (bound before
            # start-up), so the holder is this name's previous process, dead
            if holder is None or (
                holder.url != self.url and await _answers_as(holder.url, self.name)
            ):
                raise
            log.warning("instance.took_over_dead_name", name=self.name, was_at=holder.url)
            await self.orch.db.run_behind(self.registry.deregister, self.name, holder.incarnation)
            row = await self.orch.db.run_behind(
                self.registry.register, self.name, self.url, now=now, stale_after=self.lease
            )
        self.incarnation = row.incarnation
        log.info("instance.registered", name=self.name, url=self.url)

    async def deregister(self) -> None:
        if self.incarnation is not None:
            with contextlib.suppress(Exception):
                await self.orch.db.run_behind(self.registry.deregister, self.name, self.incarnation)

    # ---- the loops ---------------------------------------------------------------------

    def start(self) -> None:
        poll = self.settings.queue_poll_s
        self._loops = [
            asyncio.create_task(self._dispatch_loop(), name="replica-dispatch"),
            asyncio.create_task(_every(self.settings.lease_s / 3, self.keep_leases), name="lease"),
            asyncio.create_task(_every(poll, self.watch), name="replica-watch"),
        ]

    async def stop(self) -> None:
        """Stop the loops. The dispatcher is let finish its round: a claim it made as the stop
        began is given back to the queue, rather than left claimed and unrun."""
        self._closing = True
        self.orch.wakeup.set()
        dispatcher, *others = self._loops or [None]
        for loop in others:
            loop.cancel()
        if dispatcher is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(30):
                    await asyncio.shield(dispatcher)
        await cancel_and_wait(*self._loops)
        self._loops = []

    async def _dispatch_loop(self) -> None:
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.settings.queue_poll_s):
                    await self.orch.wakeup.wait()
            self.orch.wakeup.clear()
            try:
                await self.claim()
            except Exception as exc:  # the database is away: try again at the next poll
                _round_failed("queue.claim_failed", exc)

    async def claim(self) -> list[str]:
        """Claim and run as many queued tasks as the replica has room for (:meth:`room`)."""
        room = self.orch.room()
        if room <= 0 or self._closing or self.orch.stopping or self.incarnation is None:
            return []
        until = utcnow() + self.lease
        ids = await self.orch.db.run_behind(
            self.orch.queue.claim, self.name, until, room, kinds=list(self.orch.kinds)
        )
        tasks = await self.orch.db.run_behind(self.orch.store.get_many, ids)
        if self._closing or self.orch.stopping:  # the stop began meanwhile: start none of them
            await self.orch.db.run_behind(self.orch.queue.release, self.name, ids)
            log.info("queue.claim_released", tasks=ids, detail="green is stopping")
            return []
        for task in sorted(tasks, key=lambda t: t.created_at):
            self.orch.adopt(task)
        return ids

    async def keep_leases(self) -> None:
        """Renew this replica's heartbeat and its tasks' leases; stop the tasks it lost."""
        now = utcnow()
        alive = await self.orch.db.run_behind(
            self.registry.heartbeat, self.name, self.incarnation or "", now
        )
        if not alive and self.incarnation is not None:
            log.error("instance.name_taken_over", name=self.name, detail="claiming no more tasks")
            self.incarnation = None
        held = [t.id for t in self.orch.live]
        kept = await self.orch.db.run_behind(
            self.orch.queue.renew, self.name, held, now + self.lease
        )
        for task_id in set(held) - kept:
            live = self.orch.live.get(task_id)
            if live is not None and live.runner is not None and not live.runner.done():
                with live.log_context():
                    log.warning("task.lease_lost", detail="ended by another replica")
                live.lost = True
                self.orch.stop_soon(live)

    async def watch(self) -> None:
        """Cancels requested through other replicas, dead replicas' tasks, remote listeners."""
        for task_id in await self.orch.db.run_behind(self.orch.queue.cancel_requests, self.name):
            await self.orch.cancel(task_id, "cancelled by request (through another replica)")
        await self.take_over_expired()
        await self.orch.remote.poll()
        await self.orch.count_unfinished()
        await self._trimmer.maybe_trim()  # freed memory back to the system, now and then

    async def take_over_expired(self) -> list[str]:
        """End the tasks of replicas whose leases ran out, and remove their containers."""
        now = utcnow()
        taken = []
        running = {t.id for t in self.orch.live} | self.orch.endings.ids()
        expired = await self.orch.db.run_behind(
            self.orch.queue.expired, self.name, now, running=running
        )
        for lease in expired:
            error = (
                f"replica {lease.owner!r} stopped renewing the task's lease (it expired at "
                f"{lease.lease_until:%Y-%m-%d %H:%M:%S} UTC): it died or lost the database"
            )
            won = await self.orch.db.run_behind(
                self.orch.queue.take_over,
                self.name,
                lease.id,
                lease.owner,
                now=now,
                until=now + self.lease,
                status=TaskStatus.failed,
                failure_kind=FailureKind.infra,
                end_reason="replica_lost",
                error=error,
                finished_at=now,
            )
            if won:
                taken.append(lease.id)
                log.warning("task.replica_lost", task_id=lease.id, dead_replica=lease.owner)
        self._to_remove.update(taken)
        if self._to_remove:
            try:
                removed = await self.orch.sandboxes.reap(only=set(self._to_remove))
            except Exception as exc:  # the engine is away: retried at the next round
                log.warning("replica_lost.remove_failed", tasks=taken, error=str(exc))
            else:
                log.info("replica_lost.containers_removed", containers=removed)
                self._to_remove.clear()
        return taken


async def _every(period_s: float, work: Callable[[], Awaitable[object]]) -> None:
    while True:
        await asyncio.sleep(period_s)
        try:
            await work()
        except Exception as exc:  # the database is away for a moment: the next round retries
            _round_failed("replica.round_failed", exc, work=getattr(work, "__name__", str(work)))


def _round_failed(event: str, exc: Exception, **fields: object) -> None:
    """Log a round of the replica's work that failed (the next one retries): a database away
    or locked for a moment is expected, a warning in a line; anything else, an error with its
    traceback."""
    if isinstance(exc, UNREACHABLE):
        log.warning(event, error=str(exc).splitlines()[0][:200], **fields)
    else:
        log.error(event, exc_info=exc, **fields)


async def _answers_as(url: str, name: str) -> bool:
    """Whether a green answers at ``url`` under ``name`` (a live holder of the name)."""
    try:
        async with async_client(timeout=3) as client:
            body = (await client.get(f"{url.rstrip('/')}/healthz")).json()
    except (httpx.HTTPError, ValueError):
        return False
    return isinstance(body, dict) and body.get("instance") == name
