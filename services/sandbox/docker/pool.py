"""A pool of Docker engines behind one provider: placement, health, admission, and the ``docker``
factory.

Each engine is a :class:`~services.sandbox.docker.provider.DockerSandboxProvider` with a
capacity (task containers at once; 0: no limit of its own). Placement: among the engines that
answer and have a free slot, prefer one that already holds the image (no pull), then the one
with the most free slots, then the least busy. Images absent from an engine are pulled there on
first use, through ``registry`` when one is set.

A monitor pings every engine each ``check_s`` seconds, and its answers decide three states:

- *prompt*: it answered within :data:`PROMPT_S`. Only prompt engines admit new tasks, and at
  most one per CPU of the engine but one (:func:`.provider.start_slots`) may be starting at
  once (their containers being created and filled: the expensive part of an engine's work), so
  a burst of tasks waits in green's queue instead of drowning the engine
  (:meth:`EnginePool.can_start`);
- *slow*: it answered late, or not within ``check_s``: no new task, the running ones go on;
- *down*: it refused the ping, or was silent for :data:`SILENT_CHECKS` checks in a row: no new
  task, and every sandbox running on it is marked :attr:`lost` (the orchestrator ends those
  tasks as infra). It is up again as soon as it answers.

A container whose removal green gave up on (the janitor retries it) no longer takes a slot of
its engine (:meth:`EnginePool.set_aside`): one jammed container never makes an engine "full".
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests
from docker.tls import TLSConfig

from services.sandbox.base import EngineUnreachable, Progress, SandboxError, SandboxSpec
from services.sandbox.docker.provider import (
    DEFAULT_THREADS,
    DockerSandboxProvider,
    start_slots,
)
from services.sandbox.docker.sandbox import DockerSandbox
from services.shared.logging import get_logger
from services.shared.threads import started_pool

log = get_logger("services.sandbox.pool")

FALLBACK_API = "1.41"
"""API version for an engine that does not answer at start (Docker 20.10 and later speak it)."""
SLOT_WAIT_S = 600.0
"""How long a creation waits, by default, for a free slot when every engine that answers is full."""
PROMPT_S = 1.0
"""An engine whose ping took longer than this is slow: it admits no new task until it is prompt."""
SILENT_CHECKS = 3
"""Checks in a row without an answer after which an engine is down (one refused: at once)."""


@dataclass
class Engine:
    """One engine of the pool and what the pool knows about it."""

    name: str
    url: str
    provider: DockerSandboxProvider
    capacity: int = 0
    """Task containers at once; 0: no limit of its own."""
    up: bool = True
    error: str | None = None
    reserved: int = 0
    """Creations under way (a slot is held from placement until the container exists)."""
    checked: float = field(default=0.0)
    latency: float | None = None
    """Seconds its last ping took (None: not answered yet, or the last check had no answer)."""
    silent: int = 0
    """Checks in a row it did not answer."""
    cpus: int = 1
    """Its CPUs, as it said at its first answer."""

    @property
    def prompt(self) -> bool:
        """Up, and its last ping answered within :data:`PROMPT_S`."""
        return self.up and self.latency is not None and self.latency <= PROMPT_S

    @property
    def start_slots(self) -> int:
        """Tasks that may be starting at once on it (bounded by its free slots)."""
        return int(max(0, min(start_slots(self.cpus), self.free)))

    @property
    def running(self) -> int:
        return len(self.provider.live) + self.reserved

    @property
    def free(self) -> float:
        return float("inf") if not self.capacity else self.capacity - self.running

    def row(self) -> dict[str, object]:
        return {
            "name": self.name,
            "url": self.url,
            "up": self.up,
            "prompt": self.prompt,
            "ping_ms": None if self.latency is None else round(self.latency * 1000, 1),
            "running": self.running,
            "capacity": self.capacity or None,
            "disk_cap": self.provider.disk_cap,
            "disk_unknown": self.provider.disk_unknown(),
            "error": self.error,
        }


def parse_host(entry: str, default_slots: int) -> tuple[str, int]:
    """``tcp://h:2376#slots=4`` -> (``tcp://h:2376``, 4); without a fragment, the default."""
    url, _, fragment = entry.strip().partition("#")
    slots = default_slots
    if fragment:
        key, _, value = fragment.partition("=")
        if key != "slots" or not value.isdigit():
            raise ValueError(f"bad engine entry {entry!r}: expected <url>[#slots=<n>]")
        slots = int(value)
    if not url.startswith(("unix://", "tcp://", "ssh://", "http://", "https://")):
        raise ValueError(f"bad engine URL {url!r}: expected unix://, tcp:// or ssh://")
    return url, slots


def engine_client(
    url: str, tls_dir: Path | None = None, timeout: float = 60, pool: int = DEFAULT_THREADS
) -> Any:
    """A docker-py client for one engine URL; tcp:// uses mutual TLS when ``tls_dir`` holds
    ``ca.pem``, ``cert.pem`` and ``key.pem`` (Docker's convention); ssh:// uses the ssh client.
    The API version is the engine's own; an engine down at start gets :data:`FALLBACK_API`."""
    if url.startswith("ssh://"):
        return docker.DockerClient(
            base_url=url, use_ssh_client=True, timeout=timeout, max_pool_size=pool
        )
    tls = None
    if url.startswith("tcp://") and tls_dir is not None:
        tls = TLSConfig(
            client_cert=(str(tls_dir / "cert.pem"), str(tls_dir / "key.pem")),
            ca_cert=str(tls_dir / "ca.pem"),
            verify=True,
        )
        url = "https://" + url.removeprefix("tcp://")

    def connect(version: str) -> docker.DockerClient:
        client = docker.DockerClient(
            base_url=url, tls=tls, timeout=timeout, max_pool_size=pool, version=version
        )
        if tls is not None:
            _trust_only_the_engine_ca(client.api, url)
        return client

    probe = connect(FALLBACK_API)
    try:
        version = probe.api.version(api_version=False)["ApiVersion"]
    except (docker.errors.DockerException, requests.exceptions.RequestException, KeyError):
        return probe  # down at start: a fixed version; the monitor marks it down
    probe.close()
    return connect(version)


def _trust_only_the_engine_ca(session: requests.Session, url: str) -> None:
    """requests lets ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` replace a session's CA when a
    request does not name one, so on a machine that sets them (many do) the engine's CA would
    be ignored and its certificate refused. Keep the CA; take the environment's proxies only."""
    session.trust_env = False
    session.proxies = requests.utils.get_environ_proxies(url)


class EnginePool:
    """A :class:`~services.sandbox.base.SandboxProvider` over several engines."""

    def __init__(
        self,
        members: list[Engine],
        *,
        check_s: float = 5.0,
        slot_wait_s: float = SLOT_WAIT_S,
        executor: ThreadPoolExecutor | None = None,
    ) -> None:
        if not members:
            raise ValueError("an engine pool needs at least one engine")
        self.members = members
        self.check_s = check_s
        self.slot_wait_s = slot_wait_s
        self._executor = executor
        self._monitor: asyncio.Task[None] | None = None

    @property
    def client(self) -> docker.DockerClient:
        """The first engine's client (prefetch and verification work on that engine)."""
        return self.members[0].provider.client

    def clients(self) -> list[tuple[str, docker.DockerClient]]:
        """The engines that answered the last check, by name (the image budget works on each)."""
        return [(e.name, e.provider.client) for e in self.members if e.up]

    def engine(self, name: str) -> Engine:
        return next(e for e in self.members if e.name == name)

    async def create(self, spec: SandboxSpec, progress: Progress | None = None) -> DockerSandbox:
        """Place the sandbox (see the module doc) and create it there. When an engine fails to
        answer while creating, the next one is tried (whether it is down is the monitor's
        call: one slow creation on a loaded engine does not end every task on it)."""
        self._ensure_monitor()
        tried: list[str] = []
        while True:
            engine = await self._place(spec.image, exclude=tried)  # a slot is reserved
            try:
                return await engine.provider.create(spec, progress)
            except EngineUnreachable:
                tried.append(engine.name)
                if len(tried) == len(self.members):
                    raise
            finally:
                engine.reserved -= 1

    async def _place(self, image: str, exclude: list[str]) -> Engine:
        deadline = time.monotonic() + self.slot_wait_s
        while True:
            up = [e for e in self.members if e.up and e.name not in exclude]
            if not up:
                why = "; ".join(f"{e.name}: {e.error}" for e in self.members if e.error)
                raise EngineUnreachable(f"no Docker engine answers ({why or 'all tried'})")
            free = [e for e in up if e.free > 0]
            if free:
                held = await asyncio.gather(*(e.provider.has_image(image) for e in free))
                ranked = sorted(
                    zip(free, held, strict=True),
                    key=lambda pair: (not pair[1], -pair[0].free, pair[0].running),
                )
                for engine, _ in ranked:  # free again now: another creation may have come first
                    if engine.up and engine.free > 0:
                        engine.reserved += 1
                        return engine
                continue
            if time.monotonic() >= deadline:
                raise SandboxError(f"every engine was full for {self.slot_wait_s:g} s")
            await asyncio.sleep(0.2)

    async def reap(
        self, keep: Callable[[str], bool] | None = None, *, only: Collection[str] | None = None
    ) -> list[str]:
        """Reap on every engine that answers (a down engine is reaped when it is back); with
        ``only``, the containers of those task ids, on whichever engine holds them: then an
        engine that did not answer raises EngineUnreachable once the others are reaped, since
        no sweep of this green's own containers would ever remove them (its caller retries)."""
        self._ensure_monitor()
        names: list[str] = []
        missed: list[str] = []
        for engine in self.members:
            try:
                names += await engine.provider.reap(keep, only=only)
            except EngineUnreachable as e:  # reaped at the next sweep or start
                log.warning("engine.reap_failed", engine=engine.name, error=str(e))
                missed.append(f"{engine.name}: {e}")
        if only is not None and missed:
            raise EngineUnreachable(f"removed {names}; not reaped on {'; '.join(missed)}")
        return names

    async def ping(self) -> bool:
        """Whether an engine answers, as the monitor last saw it (no engine call here, so a
        health check answers at once however busy the engines are)."""
        if self._monitor is None:
            await self.check()
        self._ensure_monitor()
        return any(e.up for e in self.members)

    def can_start(self) -> int:
        """How many tasks may be starting at once now: the start slots of the prompt engines."""
        self._ensure_monitor()
        return sum(e.start_slots for e in self.members if e.prompt)

    def set_aside(self, sandbox: DockerSandbox) -> None:
        """Green gave up on removing ``sandbox`` (the janitor retries): it takes no slot."""
        for engine in self.members:
            engine.provider.live.discard(sandbox)

    def hear_unremoved(self, hear: Callable[[DockerSandbox], None]) -> None:
        """``hear`` is told of every sandbox of the pool whose removal failed."""
        for engine in self.members:
            engine.provider.hear_unremoved(hear)

    async def engines(self) -> list[dict[str, object]]:
        self._ensure_monitor()
        return [e.row() for e in self.members]

    async def check(self) -> None:
        """Ping every engine once (bounded by ``check_s``): prompt, slow or down (module doc)."""

        async def one(engine: Engine) -> None:
            t0 = time.monotonic()
            try:
                async with asyncio.timeout(self.check_s):
                    ok = await engine.provider.ping()
            except TimeoutError:
                engine.latency, engine.silent = None, engine.silent + 1
                if engine.silent >= SILENT_CHECKS:
                    why = f"no answer within {self.check_s:g} s, {engine.silent} checks in a row"
                    self._mark(engine, False, why)
                return
            engine.latency, engine.silent = (time.monotonic() - t0 if ok else None), 0
            self._mark(engine, ok, None if ok else "the engine does not answer")
            if ok and engine.provider.disk_cap is None:  # asked once; again if it failed
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(self.check_s):
                        engine.cpus = await engine.provider.cpus()
                        await engine.provider.check_disk_cap()

        await asyncio.gather(*(one(e) for e in self.members))

    def _mark(self, engine: Engine, up: bool, error: str | None) -> None:
        engine.checked = time.monotonic()
        if up == engine.up:
            engine.error = error
            return
        engine.up, engine.error = up, error
        if up:
            log.info("engine.up", engine=engine.name)
            return
        log.warning("engine.down", engine=engine.name, error=error)
        for sandbox in list(engine.provider.live):
            sandbox.lost = f"its Docker engine {engine.name} stopped answering: {error}"

    def _ensure_monitor(self) -> None:
        if self._monitor is None or self._monitor.done():
            with contextlib.suppress(RuntimeError):  # no running loop: the next call starts it
                self._monitor = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            await self.check()
            await asyncio.sleep(self.check_s)

    async def aclose(self) -> None:
        if self._monitor is not None:
            self._monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await self._monitor
        for engine in self.members:
            await engine.provider.aclose()
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


def docker_provider(
    *,
    owner: str | None = None,
    label_prefix: str = "arena",
    hosts: list[str] | None = None,
    slots: int = 0,
    tls_dir: Path | None = None,
    registry: str | None = None,
    check_s: float = 5.0,
    slot_wait_s: float = SLOT_WAIT_S,
    threads: int = DEFAULT_THREADS,
    timeout_s: float = 60.0,
) -> EnginePool:
    """The ``docker`` provider: a pool of the engines ``hosts`` names (none: the one
    ``DOCKER_HOST`` names, else the local socket), sharing one thread pool; ``timeout_s``: the
    longest one API call may take."""
    executor = started_pool(threads, "sandbox-docker")
    engines = []
    for i, entry in enumerate(hosts or [""]):
        if entry:
            url, capacity = parse_host(entry, slots)
            client = engine_client(url, tls_dir, timeout=timeout_s, pool=threads)
        else:
            client, capacity = docker.from_env(max_pool_size=threads, timeout=timeout_s), slots
            url = client.api.base_url
        name = f"engine-{i}" if entry else "local"
        provider = DockerSandboxProvider(
            client,
            label_prefix,
            owner=owner,
            name=name,
            registry=registry,
            executor=executor,
        )
        engines.append(Engine(name=name, url=url, provider=provider, capacity=capacity))
    return EnginePool(engines, check_s=check_s, slot_wait_s=slot_wait_s, executor=executor)
