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


class SandboxError(RuntimeError):
    """Infrastructure: the sandbox could not do what was asked (container gone, engine error)."""


class EngineUnreachable(SandboxError, ConnectionError):
    """The engine (Docker daemon, API server) did not answer: a ``ConnectionError``."""


class SandboxTimeout(SandboxError, TimeoutError):
    """The sandbox itself (not a command) did not answer in time: a ``TimeoutError``."""


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
    disk limit. The task fails as the agent's failure, with ``reason`` (``container_died``,
    ``memory_limit``, ``disk_limit``). Deliberately not a SandboxError (those are infra)."""

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

    async def exec(self, command: str, timeout: float) -> CommandResult:
        """Run ``command`` with ``bash -c`` semantics (``sh -c`` when the image has no bash),
        in ``spec.workdir``, stdin empty, stdout and stderr interleaved. Never raises for a
        failing or hanging command: a timeout kills the command's processes and returns
        ``timed_out=True``, ``exit_code=-1``; processes it leaves behind are killed when it
        ends. Raises AgentFault when the command ended the container (it stopped, the memory
        or disk limit), SandboxError when the container is gone for any other reason (removed,
        the engine unreachable), which is an infrastructure failure, not the agent's."""
        ...

    async def put_files(self, dest_dir: str, files: Mapping[str, bytes]) -> None:
        """Create ``dest_dir/<relpath>`` for each entry (parents created)."""
        ...

    async def put_archive(self, dest_dir: str, archive: bytes | BinaryIO) -> None:
        """Extract an (uncompressed or gzip) tar archive into ``dest_dir`` (created if needed).
        ``archive`` may be an open file: it is streamed, never read into memory whole."""
        ...

    async def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Read one regular file out of the container (works on a stopped one too). Raises
        FileNotFoundError, or UnreadableFile when it is a directory or larger than
        ``max_bytes``."""
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

    async def engines(self) -> list[dict[str, object]]:
        """One row per engine: ``name``, ``up``, ``running`` (tasks), ``capacity``, ``error``."""
        ...

    async def aclose(self) -> None:
        """Release what the provider holds (thread pools, connections)."""
        ...
