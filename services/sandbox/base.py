"""The sandbox seam: async protocols for one isolated container per task, and their errors.

Green only sees :class:`SandboxProvider` and :class:`Sandbox`. Providers are chosen by name
(:mod:`services.sandbox.registry`): ``docker`` (:mod:`services.sandbox.docker`, the Docker
Engine API, one engine or a pool) today; a Kubernetes provider (a pod per task, exec over the
API) would implement the same two protocols.

Errors are standard exceptions where one means the same thing: ``FileNotFoundError`` for a
missing file, ``ValueError`` for a bad path, ``ConnectionError`` (as :class:`EngineUnreachable`)
when the engine cannot be reached, ``TimeoutError`` (as :class:`SandboxTimeout`) when the
sandbox itself does not answer in time. Every infrastructure failure is a :class:`SandboxError`
(so ``except SandboxError`` still means "not the agent's fault"); the agent's own doing is an
:class:`AgentFault`; what the agent left that cannot be read is an :class:`UnreadableFile`.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol, runtime_checkable

from services.shared.commands import CommandResult

AGENT_UID = 1000
"""The uid and gid of an agent's commands unless the spec says otherwise."""


class SandboxError(RuntimeError):
    """Infrastructure: the sandbox could not do what was asked (container gone, engine error)."""


class EngineUnreachable(SandboxError, ConnectionError):
    """The engine (Docker daemon, API server) did not answer: a ``ConnectionError``."""


class SandboxTimeout(SandboxError, TimeoutError):
    """The sandbox itself (not a command) did not answer in time: a ``TimeoutError``."""


class ExecFailed(SandboxError):
    """One of green's own processes in the sandbox did not run to its end: it was still running
    at its deadline (``stalled``; it is left to the sandbox, which the caller kills or not), or
    the sandbox could not start it or it failed (at the process limit, say). Whose doing that is
    depends on the sandbox's state (:mod:`services.sandbox.docker.diagnosis`)."""

    def __init__(self, message: str, *, stalled: bool = False, exit_code: int | None = None):
        super().__init__(message)
        self.stalled = stalled
        self.exit_code = exit_code


class ImageNotFound(SandboxError, LookupError):
    """The task image is neither present on the engine nor pullable."""


class UnreadableFile(OSError):
    """A file asked for exists but cannot be handed over (a directory: ``EISDIR``, too large:
    ``EFBIG``, not a regular file): a fact about what the agent left, not infrastructure."""

    def __init__(self, message: str, code: int = errno.EINVAL) -> None:
        super().__init__(code, message)

    def __str__(self) -> str:
        return str(self.strerror)


class AgentFault(Exception):
    """The agent's own commands ended its container: they stopped it, or it hit the memory or
    disk limit, or (a judging container) its disk use could no longer be measured. The task
    fails as the agent's failure, with ``reason`` (``container_died``, ``memory_limit``,
    ``disk_limit``, ``disk_unmeasured``). Deliberately not a SandboxError (those are infra)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


Progress = Callable[[str], None]
"""Called with a short human line while a provider works (an image pull's progress). Providers
call it on the event loop that awaits them, never from another thread."""


@dataclass(frozen=True)
class SandboxSpec:
    """How to create one task container."""

    image: str
    task_id: str
    ref_id: str
    """The task's id within its kind (an ARVO id, a SWE-bench instance id): labels, names."""
    memory: str = "4g"
    """Memory limit (docker syntax: 512m, 4g)."""
    cpus: float = 1.0
    pids_limit: int = 512
    network: bool = False
    """False: the container has no network at all (network_mode=none)."""
    output_limit: int = 64 * 1024
    """Bytes of output kept per command (head and tail halves)."""
    workdir: str = "/workspace"
    """Where commands run."""
    labels: Mapping[str, str] = field(default_factory=dict)
    disk_limit: int | None = None
    """Bytes the task may write into the container's writable layer, beyond what was copied
    in before its first command; None: no cap."""
    disk_room: int = 0
    """Bytes green itself copies in before the first command (the workspace): room added to a
    quota the engine enforces, so the cap is what the agent's commands may add."""
    disk_check_s: float = 1.0
    """How often the writable layer is measured while a command runs (with a disk_limit)."""
    agent_uid: int | None = AGENT_UID
    """The uid and gid :meth:`Sandbox.exec`'s commands run as, with no group, no capability and
    no way to gain one: they cannot signal, trace or replace what green runs in the sandbox as
    root (the session's driver, the kill, the disk scans), nor write root's files. None: as root,
    for green's own containers only (builds, task verification, judging), never an agent's."""
    agent_home: str = "/home/agent"
    """The agent's ``HOME``: made its own before its first command (no passwd entry is needed)."""
    writable: tuple[str, ...] = ()
    """What the agent's commands may write besides its home and ``/tmp``: these paths (created
    when missing) become its own, recursively, before its first command. Everything else keeps
    the image's owners (root). A kind names them (ARVO: ``/workspace``; a kind whose agent
    edits the project: its source tree); on overlay2 a path of the image is copied up whole."""
    private_dir: str | None = None
    """Green's own folder in the sandbox (a child of ``/``): made empty, root's and ``0711``
    before anything is copied in or run, never handed over. Files copied into it (root's,
    ``0644``) may be copied at any time, after the agent's commands began too: no path on the
    way is the agent's to change, and without a listing it finds them only by their names (a
    judge gives each input a fresh random one)."""
    unmeasured_stops: bool = False
    """With a watched ``disk_limit``: a disk use that turns unknown (its measurements failed
    :data:`~services.sandbox.docker.disk.UNKNOWN_AFTER` times in a row) stops the container as
    the agent's ``disk_unmeasured`` (:class:`AgentFault`), instead of the task running on
    unwatched. For green's containers that run the agent's code (judging)."""

    def __post_init__(self) -> None:
        d = self.private_dir
        if d is not None and (
            not d.startswith("/") or "/" in d[1:] or d in ("/", "/.", "/..") or d in self.writable
        ):
            raise ValueError(f"private_dir must be a child of / that is not handed over: {d!r}")


@runtime_checkable
class Sandbox(Protocol):
    """A running task container. Safe for concurrent coroutines: calls are serialized."""

    @property
    def name(self) -> str: ...

    @property
    def engine(self) -> str:
        """Which engine runs it (a name from the provider's pool; ``local`` alone)."""
        ...

    lost: str | None
    """Why the sandbox can no longer be used although no call failed yet (its engine stopped
    answering, say); None while all is well. The orchestrator ends such a task as infra."""

    @property
    def disk_unknown(self) -> str | None:
        """Why its disk use could not be measured lately (its measurements failed again and
        again): the task runs on, its cap unwatched meanwhile, and the operator is told. None
        while measurements work, or without a cap."""
        ...

    async def exec(self, command: str, timeout: float) -> CommandResult:
        """Run ``command`` with ``bash -c`` semantics (``sh -c`` when the image has no bash),
        in ``spec.workdir``, stdin empty, stdout and stderr interleaved. Never raises for a
        failing or hanging command: a timeout kills the command's processes and returns
        ``timed_out=True``, ``exit_code=-1``; processes it leaves behind are killed when it
        ends. Raises AgentFault when the command ended the container (it stopped, the memory
        or disk limit), SandboxError when the container is gone for any other reason (removed,
        the engine unreachable), which is an infrastructure failure, not the agent's."""
        ...

    async def setup(self, command: str, timeout: float) -> CommandResult:
        """Run green's own ``command`` (``sh -c``) as root, to its end within ``timeout``
        seconds: a kind's preparation of the workspace. Only before the agent's first command
        (then refused: root never acts on what the agent could have changed)."""
        ...

    async def put_files(self, dest_dir: str, files: Mapping[str, bytes]) -> None:
        """Create ``dest_dir/<relpath>`` for each entry (parents created). Only before the
        agent's first command, as :meth:`setup`."""
        ...

    async def put_archive(self, dest_dir: str, archive: bytes | BinaryIO) -> None:
        """Extract an (uncompressed or gzip) tar archive into ``dest_dir`` (created if needed).
        ``archive`` may be an open file: it is streamed, never read into memory whole."""
        ...

    async def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Read one regular file out of the container (works on a stopped one too). Raises
        FileNotFoundError, or UnreadableFile when it, or a directory on its path, is a
        symbolic link, when it is not a regular file (a directory, a fifo, a device) or larger
        than ``max_bytes``: what the agent left, never infra. Error texts name only ``path``."""
        ...

    async def read_tree(self, path: str, out: BinaryIO, max_bytes: int) -> None:
        """Write a tar of the directory ``path`` to ``out``, made by the engine (no tool of the
        container's runs), at most ``max_bytes``. Raises FileNotFoundError, or UnreadableFile
        when ``path`` is a symbolic link or no directory or its tar is larger: what the agent
        left, never infra."""
        ...

    async def remove(self) -> None:
        """Kill and delete the container. Idempotent; a command running concurrently is
        interrupted (its ``exec`` raises SandboxError)."""
        ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Creates sandboxes, says whether its engines answer, and cleans up after crashes."""

    async def create(self, spec: SandboxSpec, progress: Progress | None = None) -> Sandbox:
        """A started sandbox for ``spec``. Pulls an absent image first (``progress`` hears
        how it goes). Raises ImageNotFound, EngineUnreachable, SandboxError."""
        ...

    async def reap(
        self, keep: Callable[[str], bool] | None = None, *, only: Collection[str] | None = None
    ) -> list[str]:
        """Remove every container this provider labelled and that is still around, except those
        whose task id ``keep`` accepts; return their names. With ``only``: the containers of
        those task ids, whichever replica (owner) created them (a dead replica's tasks)."""
        ...

    async def ping(self) -> bool:
        """True when the engine (every engine of a pool: at least one) answers."""
        ...

    def can_start(self) -> int:
        """How many tasks may be starting at once now (their sandboxes being created and
        filled) without overloading the engines; 0 while none answers promptly. Green claims
        no more than this from its queue: a burst waits there instead of failing."""
        ...

    def set_aside(self, sandbox: Sandbox) -> None:
        """Green gave up on removing ``sandbox`` (it retries in the background): it no longer
        takes a slot of its engine."""
        ...

    def hear_unremoved(self, hear: Callable[[Sandbox], None]) -> None:
        """``hear`` is told of every sandbox whose removal failed, whoever removed it (a task's
        cleanup, a judging container's owner): the sandbox is set aside already (no slot)."""
        ...

    async def engines(self) -> list[dict[str, object]]:
        """One row per engine: ``name``, ``up``, ``running`` (tasks), ``capacity``, ``error``."""
        ...

    async def aclose(self) -> None:
        """Release what the provider holds (thread pools, connections)."""
        ...
