"""Creates locked-down task containers on one Docker engine, and reaps the ones left behind.

Containers are created locked down: no network (``network_mode=none``) unless the spec asks
for it, no privileges, ``no-new-privileges``, a few capabilities dropped, memory, CPU and
process limits, no core dumps, no log kept by the engine (green reads commands over their exec
streams; a container log would be a disk the agent fills unmetered). The agent's commands run as
a uid of their own with no capability (:mod:`services.sandbox.shell_scripts`); what runs as root
is green's (the keeper, the session's driver, kills, scans), which keeps ``CAP_SYS_PTRACE`` so
that its scan of open files sees a process the agent made non-dumpable. Their pid 1 is :data:`KEEPER`, a shell that ignores every
signal and reaps the zombies killed commands leave; the kernel never delivers SIGKILL or
SIGSTOP to a pid namespace's init from inside, so no command (``kill -9 -1`` included) can
stop the container. docker-py is blocking: every call runs in the provider's thread pool, so
the async seam never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import Callable, Collection
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

import docker
import docker.errors
from docker.types import LogConfig, Ulimit

from services.sandbox.base import Progress, SandboxError, SandboxSpec
from services.sandbox.docker.disk import LOCAL_ENGINE, local_btrfs_updates_atime
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error
from services.sandbox.docker.images import ensure_image, has_image
from services.sandbox.docker.sandbox import DockerSandbox
from services.shared.logging import get_logger
from services.shared.threads import started_pool

log = get_logger("services.sandbox.provider")

DROPPED_CAPS = [
    "AUDIT_WRITE",
    "MKNOD",
    "NET_ADMIN",
    "NET_RAW",
    "SETFCAP",
    "SYS_ADMIN",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_TIME",
]
"""Dropped on top of Docker's defaults. Kept: what builds and tar extraction need (CHOWN,
DAC_OVERRIDE, FOWNER, FSETID, SETUID, SETGID, KILL), for green's own root processes and
containers; the agent's commands hold none of them. Sanitizers need no capability; gdb on the
agent's own processes works without SYS_PTRACE."""
ADDED_CAPS = ["SYS_PTRACE"]
"""Added for root only: green's scan of ``/proc/*/fd`` must read a non-dumpable process's
files. The agent's processes (another uid, an empty bounding set, no new privileges) can never
hold it, so they cannot trace or read any process that is not theirs."""

KEEPER = (
    "trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM TSTP TTIN TTOU; "
    "while :; do sleep 2147483647 & wait; done"
)
"""Pid 1 of a task container (``/bin/sh -c``). It ignores every signal it can (SIGKILL and
SIGSTOP from inside the namespace never reach an init), restarts its ``sleep`` child if that
is killed, and its ``wait`` reaps every child, orphans adopted from killed commands too."""

QUOTA_SLACK = 4 * 2**20
"""Bytes added to an enforced quota for the file system's own bookkeeping of the container."""

DEFAULT_THREADS = 32
"""Threads for docker-py's blocking calls when no executor is given."""

CPUS_KEPT = 1
"""CPUs of an engine that its task starts leave to everything else on the machine: at most one
task per CPU, less this, may be starting at once (their containers being created and filled,
the expensive part of an engine's work), and at least one. Starts are CPU-bound in the engine
(``dockerd``, ``containerd``, ``runc``): while they take every core, green's event loop waits
for one, and so does every request to it. On two cores, ``POST /tasks`` while 64 tasks started
answered with p95 28-46 ms with one start at a time (twelve runs, all under the 50 ms goal)
against 33-65 ms with two (seven of fourteen runs over it) and 50-100 ms with four (six runs);
the 64 ran in 34-42 s against 30-34 s (``bench/bench_burst.py``; docs/scale.md)."""


def start_slots(cpus: float) -> int:
    """Tasks that may be starting at once on an engine with ``cpus`` CPUs (one per CPU, less
    :data:`CPUS_KEPT`, at least one)."""
    return max(1, int(cpus) - CPUS_KEPT)


class DockerSandboxProvider:
    """Creates :class:`DockerSandbox` containers on one engine and reaps leftovers.

    ``client`` defaults to ``docker.from_env()`` (``DOCKER_HOST`` and friends). Containers are
    named ``arena-task-<8 hex>`` and labelled ``<label_prefix>.task_id``, ``.ref_id``,
    ``.managed=1`` and, with an ``owner``, ``.owner=<owner>``; :meth:`reap` finds them by
    ``managed`` (and ``owner``, so several green replicas sharing one engine only reap their
    own). ``registry``: pull absent images through this registry prefix (see :mod:`.images`).
    """

    def __init__(
        self,
        client: docker.DockerClient | None = None,
        label_prefix: str = "arena",
        *,
        owner: str | None = None,
        name: str = "local",
        registry: str | None = None,
        executor: Executor | None = None,
        init: bool = True,
    ) -> None:
        self._client = client if client is not None else docker.from_env()
        self._prefix = label_prefix
        self._owner = owner
        self.name = name
        self.registry = registry
        self._own_executor = executor is None
        self._executor = executor or started_pool(DEFAULT_THREADS, f"sandbox-{name}")
        self._init = init  # accepted for compatibility and ignored: Docker's init would exit
        self._ncpu: int | None = None
        self.disk_cap: str | None = None
        """How this engine holds a task's disk cap: ``enforced`` (the storage driver's quota,
        ``storage_opt size``) or ``watched`` (green measures, :mod:`.disk`); None until asked
        (:meth:`check_disk_cap`)."""
        self.live: set[DockerSandbox] = set()
        """Sandboxes created here and not removed yet."""
        self._unremoved_listeners: list[Callable[[DockerSandbox], None]] = []

    @property
    def client(self) -> docker.DockerClient:
        return self._client

    @property
    def managed_label(self) -> str:
        return f"{self._prefix}.managed=1"

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    async def create(self, spec: SandboxSpec, progress: Progress | None = None) -> DockerSandbox:
        """Pull the image when absent, create and start the container. Raises ImageNotFound,
        SandboxError (EngineUnreachable when the engine does not answer)."""
        loop = asyncio.get_running_loop()
        say = None
        if progress is not None:  # the pull runs in a thread: hand its lines to the loop
            say = lambda line: loop.call_soon_threadsafe(progress, line)  # noqa: E731
        await self._io(
            lambda: ensure_image(
                self._client, spec.image, registry=self.registry, progress=say, engine=self.name
            )
        )
        if spec.disk_limit and self.disk_cap is None:
            await self.check_disk_cap()
        container, quota = await self._io(self._create, spec)
        sandbox = DockerSandbox(
            self._client,
            container,
            spec,
            self._executor,
            engine=self.name,
            on_removed=self.live.discard,
            on_unremoved=self._unremoved,
            quota=quota,
        )
        self.live.add(sandbox)
        return sandbox

    def _create(self, spec: SandboxSpec) -> tuple[Any, int | None]:
        """The started container, and its enforced disk quota (bytes; None: watched)."""
        name = f"arena-task-{secrets.token_hex(4)}"
        options = self._options(spec, name)
        quota = self._quota(spec) if spec.disk_limit and self.disk_cap == "enforced" else None
        if quota:
            options["storage_opt"] = {"size": str(quota)}
        try:
            container = self._client.containers.create(spec.image, **options)
        except docker.errors.APIError as e:
            if quota and "storage-opt" in str(e.explanation or ""):  # e.g. xfs without pquota
                log.warning("engine.disk_cap", engine=self.name, mode="watched", why=str(e))
                self.disk_cap = "watched"
                return self._create(spec)
            raise SandboxError(f"cannot create {name} from {spec.image}: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise engine_error(e, f"cannot create {name}") from e
        try:
            container.start()
        except ENGINE_ERRORS as e:
            with contextlib.suppress(*ENGINE_ERRORS):  # else the janitor's sweep removes it
                container.remove(force=True, v=True)
            raise engine_error(e, f"cannot start {name}") from e
        return container, quota

    def _quota(self, spec: SandboxSpec) -> int:
        """The container's quota: the engine counts what its file system references (the
        image's files too), so the image's size, the cap, the workspace green copies in and a
        little slack."""
        try:
            image = int(self._client.images.get(spec.image).attrs.get("Size") or 0)
        except docker.errors.APIError as e:
            raise SandboxError(f"cannot inspect {spec.image}: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise engine_error(e, f"cannot inspect {spec.image}") from e
        return image + (spec.disk_limit or 0) + spec.disk_room + spec.disk_room // 8 + QUOTA_SLACK

    async def check_disk_cap(self) -> str:
        """Ask the engine whether its storage driver enforces ``storage_opt size`` (btrfs;
        overlay2 over XFS, which needs the ``pquota`` mount option: a refusal at the first
        creation turns it to ``watched``); logs the answer once."""
        info = await self._io(self._client.info)
        driver = str(info.get("Driver") or "")
        backing = dict(info.get("DriverStatus") or []).get("Backing Filesystem", "")
        enforced = driver == "btrfs" or (driver == "overlay2" and backing == "xfs")
        mode = "enforced" if enforced else "watched"
        if self.disk_cap != mode:
            log.info("engine.disk_cap", engine=self.name, mode=mode, driver=driver, fs=backing)
            if driver == "btrfs":
                self._check_atime(str(info.get("DockerRootDir") or ""))
        self.disk_cap = mode
        return mode

    def _check_atime(self, data_root: str) -> None:
        """Warn when the btrfs data-root of a local engine updates access times: removing a
        container whose quota is full then takes the engine more than a minute (docs/engines.md)."""
        if self._client.api.base_url != LOCAL_ENGINE or not data_root:
            return
        if local_btrfs_updates_atime(f"{data_root}/btrfs/subvolumes"):  # the driver's own
            log.warning(
                "engine.btrfs_atime",
                engine=self.name,
                data_root=data_root,
                advice="mount the engine's btrfs data-root with noatime: with atime updates, "
                "removing a container whose quota is full takes more than a minute of its time",
            )

    def _options(self, spec: SandboxSpec, name: str) -> dict[str, Any]:
        labels = {
            **spec.labels,
            f"{self._prefix}.task_id": spec.task_id,
            f"{self._prefix}.ref_id": spec.ref_id,
            f"{self._prefix}.managed": "1",
        }
        if self._owner:
            labels[f"{self._prefix}.owner"] = self._owner
        options: dict[str, Any] = {
            "name": name,
            "labels": labels,
            "entrypoint": ["/bin/sh", "-c"],
            "command": [KEEPER],
            "working_dir": spec.workdir,
            "init": False,  # the keeper is pid 1: Docker's init would stop with its child
            "user": "0",  # green's processes are root's whatever the image says; the agent's not
            "privileged": False,
            "security_opt": ["no-new-privileges"],
            "cap_drop": DROPPED_CAPS,
            "cap_add": ADDED_CAPS,
            "log_config": LogConfig(type=LogConfig.types.NONE),
            "mem_limit": spec.memory,
            "memswap_limit": spec.memory,  # no swap on top of the memory limit
            "nano_cpus": int(min(spec.cpus, self._host_cpus()) * 1e9),
            "pids_limit": spec.pids_limit,
            "ulimits": [Ulimit(name="core", soft=0, hard=0)],
        }
        if spec.disk_limit:  # no single file past the cap
            options["ulimits"].append(
                Ulimit(name="fsize", soft=spec.disk_limit, hard=spec.disk_limit)
            )
        if not spec.network:
            options["network_mode"] = "none"
        return options

    async def reap(
        self, keep: Callable[[str], bool] | None = None, *, only: Collection[str] | None = None
    ) -> list[str]:
        """Remove every container labelled ``<prefix>.managed=1`` (and ``<prefix>.owner=<owner>``
        when this provider has an owner), running or not, except those whose task id ``keep``
        accepts. With ``only``: the containers labelled with those task ids, whatever their
        owner."""
        return await self._io(self._reap, keep, None if only is None else set(only))

    def _reap(self, keep: Callable[[str], bool] | None, only: set[str] | None) -> list[str]:
        labels = [self.managed_label]
        if self._owner and only is None:
            labels.append(f"{self._prefix}.owner={self._owner}")
        try:
            # One list call, whose rows carry the labels: no inspection of each container (on
            # a busy engine, one removed meanwhile by its own task's end failed the whole reap,
            # and every inspection is one more call queued behind the engine's other work).
            leftovers = self._client.api.containers(all=True, filters={"label": labels})
        except ENGINE_ERRORS as e:
            raise engine_error(e, "cannot list containers") from e
        names = []
        for row in leftovers:
            task_id = (row.get("Labels") or {}).get(f"{self._prefix}.task_id", "")
            if (keep is not None and keep(task_id)) or (only is not None and task_id not in only):
                continue
            name = ((row.get("Names") or [""])[0] or row["Id"][:12]).lstrip("/")
            try:
                self._client.api.remove_container(row["Id"], force=True, v=True)
                names.append(name)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:  # e.g. 409: a removal is already in progress
                if e.status_code != 409:
                    raise SandboxError(f"cannot remove {name}: {e.explanation}") from e
            except ENGINE_ERRORS as e:
                raise engine_error(e, f"cannot remove {name}") from e
        return names

    async def ping(self) -> bool:
        try:
            return bool(await self._io(self._client.ping))
        except Exception:
            return False

    async def engines(self) -> list[dict[str, object]]:
        up = await self.ping()
        return [
            {
                "name": self.name,
                "up": up,
                "running": len(self.live),
                "capacity": None,
                "disk_cap": self.disk_cap,
                "disk_unknown": self.disk_unknown(),
                "error": None if up else "the engine does not answer",
            }
        ]

    def disk_unknown(self) -> int:
        """How many of its task containers' disk use is unknown now (their measurements keep
        failing: a watched cap is blind there until one works again)."""
        return sum(1 for sandbox in list(self.live) if sandbox.disk_unknown)

    async def has_image(self, image: str) -> bool:
        """Whether the engine holds ``image`` (False when it cannot be asked)."""
        try:
            return bool(await self._io(has_image, self._client, image))
        except SandboxError:
            return False

    async def aclose(self) -> None:
        if self._own_executor and isinstance(self._executor, ThreadPoolExecutor):
            self._executor.shutdown(wait=False, cancel_futures=True)

    def can_start(self) -> int:
        """Tasks that may be starting at once here (:func:`start_slots`; the engine pool
        also asks whether the engine answers promptly)."""
        ncpu = self._ncpu if self._ncpu and self._ncpu < 1 << 16 else 1
        return start_slots(ncpu)

    def set_aside(self, sandbox: DockerSandbox) -> None:
        """Green gave up on removing ``sandbox`` (the janitor retries): it takes no slot."""
        self.live.discard(sandbox)

    def hear_unremoved(self, hear: Callable[[DockerSandbox], None]) -> None:
        """``hear`` is told of every sandbox of this engine whose removal failed (after its
        fallbacks), whoever asked for it: a task's cleanup, a judge's box, the janitor."""
        self._unremoved_listeners.append(hear)

    def _unremoved(self, sandbox: DockerSandbox) -> None:
        self.set_aside(sandbox)
        for hear in self._unremoved_listeners:
            hear(sandbox)

    async def cpus(self) -> int:
        """The engine's CPUs (1 when it does not say)."""
        ncpu = await self._io(self._host_cpus)
        return int(ncpu) if ncpu < 1 << 16 else 1

    def _host_cpus(self) -> float:
        if self._ncpu is None:
            try:
                self._ncpu = int(self._client.info().get("NCPU", 0)) or 1 << 16
            except ENGINE_ERRORS as e:
                raise engine_error(e, "cannot ask the engine for its CPUs") from e
        return float(self._ncpu)
