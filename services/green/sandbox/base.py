"""The sandbox seam: one isolated container per task.

The orchestrator only sees these protocols; :mod:`services.green.sandbox.docker` implements
them with the Docker Engine API (local socket or remote ``DOCKER_HOST``); a Kubernetes
implementation would plug in here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, Protocol, runtime_checkable

from services.shared.commands import CommandResult


class SandboxError(RuntimeError):
    """The sandbox could not do what was asked (image missing, container gone, API error)."""


class ImageNotFound(SandboxError):
    """The task image is neither present locally nor pullable."""


class UnreadableFile(SandboxError):
    """A file asked for exists but cannot be handed over (a directory, too large, not a
    regular file): a fact about what the agent left, not a failure of the harness."""


class AgentFault(Exception):
    """The agent's own commands ended its container: they stopped it, or it hit the memory or
    disk limit. The task fails as the agent's failure, with ``reason`` (``container_died``,
    ``memory_limit``, ``disk_limit``). Deliberately not a SandboxError (those are infra)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SandboxSpec:
    """How to create one task container."""

    image: str
    task_id: str
    arvo_id: str
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
    disk_check_s: float = 1.0
    """How often the writable layer is measured while a command runs (with a disk_limit)."""


@runtime_checkable
class Sandbox(Protocol):
    """A running task container. Thread-safe: concurrent calls are serialized."""

    @property
    def name(self) -> str: ...

    def exec(self, command: str, timeout: float) -> CommandResult:
        """Run ``command`` with ``bash -c`` semantics (``sh -c`` when the image has no bash),
        in ``spec.workdir``, stdin empty, stdout and stderr interleaved. Never raises for a
        failing or hanging command: a timeout kills the command's processes and returns
        ``timed_out=True``, ``exit_code=-1``; processes it leaves behind are killed when it
        ends. Raises AgentFault when the command ended the container (it stopped, the memory
        or disk limit), SandboxError when the container is gone for any other reason (removed,
        the engine unreachable), which is an infrastructure failure, not the agent's."""
        ...

    def put_files(self, dest_dir: str, files: Mapping[str, bytes]) -> None:
        """Create ``dest_dir/<relpath>`` for each entry (parents created)."""
        ...

    def put_archive(self, dest_dir: str, archive: bytes | BinaryIO) -> None:
        """Extract an (uncompressed or gzip) tar archive into ``dest_dir`` (created if needed).
        ``archive`` may be an open file: it is streamed, never read into memory whole."""
        ...

    def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Read one regular file out of the container (works on a stopped one too). Raises
        FileNotFoundError, or SandboxError when it is a directory or larger than
        ``max_bytes``."""
        ...

    def remove(self) -> None:
        """Kill and delete the container. Idempotent."""
        ...


@runtime_checkable
class SandboxProvider(Protocol):
    """Creates sandboxes and cleans up after crashes."""

    def create(self, spec: SandboxSpec) -> Sandbox: ...

    def reap(self, keep: Callable[[str], bool] | None = None) -> list[str]:
        """Remove every container this provider labelled and that is still around, except those
        whose task id ``keep`` accepts; return their names."""
        ...

    def ping(self) -> bool:
        """True when the engine answers."""
        ...
