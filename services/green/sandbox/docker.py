"""The Docker implementation of the sandbox seam.

Everything goes through the Engine API (files are copied in and out with ``put_archive`` /
``get_archive``, never bind-mounted), so green works the same against the local socket, from
inside a container with the host's socket mounted, or against a remote ``DOCKER_HOST``.

Containers are created locked down: no network (``network_mode=none``) unless the spec asks
for it, no privileges, ``no-new-privileges``, a few capabilities dropped, memory, CPU and
process limits, no core dumps. Their pid 1 is :data:`KEEPER`, a shell that ignores every
signal and reaps the zombies killed commands leave; the kernel never delivers SIGKILL or
SIGSTOP to a pid namespace's init from inside, so no command (``kill -9 -1`` included) can
stop the container. Every command runs through one persistent
:class:`~services.green.sandbox.session.ShellSession` (see there for framing, timeouts and
output capping).

Error policy: a failing, hanging or session-killing command is a :class:`CommandResult`
(``exit_code=-1`` when it did not finish). A container that stopped during a command anyway
(the memory limit, the disk limit, anything else the engine does not explain) raises
:class:`AgentFault`; a container that is gone for another reason (green removed it, someone
removed it from outside, the engine is unreachable) raises :class:`SandboxError`, and so does
every docker-py, requests or urllib3 error, so the orchestrator can tell an infrastructure
failure from an agent's.
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import re
import secrets
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, BinaryIO

import docker
import docker.errors
from docker.models.containers import Container
from docker.types import Ulimit

from services.green.sandbox.base import (
    AgentFault,
    ImageNotFound,
    SandboxError,
    SandboxSpec,
    UnreadableFile,
)
from services.green.sandbox.diagnosis import diagnose, raise_if_stopped
from services.green.sandbox.disk import DiskWatch
from services.green.sandbox.engine import ENGINE_ERRORS
from services.green.sandbox.session import SessionLost, ShellSession
from services.shared.commands import CommandResult

DROPPED_CAPS = [
    "AUDIT_WRITE",
    "MKNOD",
    "NET_ADMIN",
    "NET_RAW",
    "SETFCAP",
    "SYS_ADMIN",
    "SYS_MODULE",
    "SYS_PTRACE",
    "SYS_RAWIO",
    "SYS_TIME",
]
"""Dropped on top of Docker's defaults. Kept: what builds and tar extraction need (CHOWN,
DAC_OVERRIDE, FOWNER, FSETID, SETUID, SETGID, KILL). Sanitizers need no capability; gdb on
the agent's own processes works without SYS_PTRACE."""

KEEPER = (
    "trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM TSTP TTIN TTOU; "
    "while :; do sleep 2147483647 & wait; done"
)
"""Pid 1 of a task container (``/bin/sh -c``). It ignores every signal it can (SIGKILL and
SIGSTOP from inside the namespace never reach an init), restarts its ``sleep`` child if that
is killed, and its ``wait`` reaps every child, orphans adopted from killed commands too."""

_GO_MODE_DIR = 1 << 31  # Go's os.ModeDir, as in the archive endpoint's path stat


class DockerSandbox:
    """One task container. Thread-safe: a lock serializes commands and file transfers;
    :meth:`remove` may be called from any thread at any time (it interrupts a running
    command, which then raises SandboxError)."""

    def __init__(self, client: docker.DockerClient, container: Container, spec: SandboxSpec):
        self._client = client
        self._container = container
        self.spec = spec
        self._lock = threading.Lock()
        self._session: ShellSession | None = None
        self._removed = False
        self._created_at = int(time.time()) - 60  # events since then (slack for clock skew)
        self._disk: DiskWatch | None = None
        if spec.disk_limit:
            self._disk = DiskWatch(
                self.disk_used, spec.disk_limit, spec.disk_check_s, self._stop_for_disk
            )

    @property
    def name(self) -> str:
        return self._container.name

    @property
    def id(self) -> str:
        return self._container.id

    def __repr__(self) -> str:
        return f"DockerSandbox({self.name!r})"

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()

    # -- commands --------------------------------------------------------------------------

    def exec(self, command: str, timeout: float) -> CommandResult:
        """Run ``command`` through the persistent shell session (opened on first use and
        reopened transparently when it died). Raises AgentFault when the container stopped
        (see :meth:`_diagnose`), SandboxError when it is gone for another reason."""
        with self._lock:
            if self._disk:
                self._disk.start()
            try:
                return self._exec(command, timeout)
            except SandboxError as e:
                raise self._diagnose(e) from e
            finally:
                if self._disk:
                    self._disk.pause()

    def _exec(self, command: str, timeout: float) -> CommandResult:
        for attempt in (1, 2):
            session = self._live_session()
            try:
                result = session.run(command, timeout, self.spec.output_limit)
            except SessionLost as e:
                self._session = None
                if attempt == 2 or self._removed:
                    raise SandboxError(f"{self.name}: {e}") from e
                continue
            if self._removed:  # remove() interrupted the command
                raise SandboxError(f"{self.name} was removed while the command ran")
            if not session.alive:  # the session died mid-command: with the container?
                raise_if_stopped(self._client.api, self.id, self.name)
            return result
        raise AssertionError("unreachable")

    def _diagnose(self, error: SandboxError) -> Exception:
        """Why a command lost its container (see :mod:`.diagnosis`); green's own removal and
        the disk watchdog's stop are known here."""
        if self._disk and self._disk.exceeded is not None:
            return AgentFault(
                "disk_limit",
                f"the task's commands wrote {self._disk.exceeded:,} bytes into the container "
                f"at {self._disk.rate / 2**20:,.0f} MiB/s, past or about to pass its disk "
                f"limit ({self._disk.limit:,} bytes); the container was stopped",
            )
        if self._removed:
            return error
        return diagnose(
            self._client.api,
            self.id,
            self.name,
            error,
            memory=self.spec.memory,
            since=self._created_at,
        )

    def _live_session(self) -> ShellSession:
        if self._removed:
            raise SandboxError(f"{self.name} was removed")
        if self._session is None or not self._session.alive:
            session = ShellSession(self._client.api, self.id, self.spec.workdir)
            session.open()
            self._session = session
        return self._session

    def disk_used(self) -> int | None:
        """Bytes in the container's writable layer, as the engine measures them."""
        rows = self._client.api.containers(all=True, size=True, filters={"id": self.id})
        return int(rows[0].get("SizeRw") or 0) if rows else None

    def _stop_for_disk(self, size: int) -> None:
        self._client.api.kill(self.id)  # the running command's exec sees its session end

    # -- files -----------------------------------------------------------------------------

    def put_files(self, dest_dir: str, files: Mapping[str, bytes]) -> None:
        """Write ``dest_dir/<relpath>`` for each entry (mode 0644, owner root). Parents are
        created by the engine while extracting (mode 0755); existing directories keep their
        mode because the archive holds file entries only."""
        dest = _absolute(dest_dir)
        if not files:
            self._mkdir(dest)
            return
        buf = io.BytesIO()
        now = time.time()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for relpath, data in files.items():
                info = tarfile.TarInfo(_member_name(dest, relpath))
                info.size, info.mode, info.mtime = len(data), 0o644, now
                tar.addfile(info, io.BytesIO(data))
        self._put("/", buf.getvalue())

    def put_archive(self, dest_dir: str, archive: bytes | BinaryIO) -> None:
        """Extract a tar (plain, gzip, bzip2 or xz: the engine decompresses) into ``dest_dir``;
        an open file is streamed to the engine."""
        dest = _absolute(dest_dir)
        self._mkdir(dest)
        self._put(dest, archive)

    def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Read one regular file (a symlink is followed) through ``get_archive``, streamed and
        bounded: a file larger than ``max_bytes`` is refused without being read whole."""
        path = _absolute(path)
        with self._lock, self._api_errors(f"read {path}", missing=FileNotFoundError):
            stream, stat = self._container.get_archive(path, chunk_size=64 * 1024)
            if stat.get("linkTarget"):  # the archive would hold the link: read its target
                stream.close()
                stream, stat = self._container.get_archive(stat["linkTarget"], 64 * 1024)
            try:
                return _extract_single(path, stream, stat, max_bytes)
            finally:
                stream.close()

    def _put(self, dest: str, data: bytes | BinaryIO) -> None:
        with self._lock, self._api_errors(f"copy into {dest}"):
            if not self._container.put_archive(dest, data):
                raise SandboxError(f"{self.name}: the engine refused the archive for {dest}")

    def _mkdir(self, dest: str) -> None:
        with self._lock, self._api_errors(f"mkdir {dest}"):
            code, out = self._container.exec_run(["mkdir", "-p", "--", dest])
        if code != 0:
            raise SandboxError(f"{self.name}: mkdir {dest} failed: {out.decode(errors='replace')}")

    @contextlib.contextmanager
    def _api_errors(self, what: str, missing: type[Exception] = SandboxError) -> Iterator[None]:
        """Map Docker errors: a missing container is SandboxError, a missing path ``missing``."""
        if self._removed:
            raise SandboxError(f"{self.name} was removed")
        try:
            yield
        except docker.errors.NotFound as e:
            if "No such container" in str(e.explanation):
                raise SandboxError(f"{self.name} is gone: {e.explanation}") from e
            raise missing(f"{self.name}: cannot {what}: {e.explanation}") from e
        except docker.errors.APIError as e:
            raise SandboxError(f"{self.name}: cannot {what}: {e.explanation or e}") from e
        except ENGINE_ERRORS as e:
            raise SandboxError(f"{self.name}: cannot {what}: the engine failed: {e}") from e

    # -- lifecycle -------------------------------------------------------------------------

    def remove(self) -> None:
        """Kill and delete the container and its anonymous volumes. Idempotent; a command
        running in another thread is interrupted (its ``exec`` raises SandboxError)."""
        self._removed = True
        if self._disk:
            self._disk.stop()
        try:
            self._container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if e.status_code != 409:  # 409: removal already in progress
                raise SandboxError(f"cannot remove {self.name}: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot remove {self.name}: the engine failed: {e}") from e
        finally:
            session = self._session
            if session is not None:
                session.shutdown()  # wakes a concurrent exec, which then closes it
        with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None


class DockerSandboxProvider:
    """Creates :class:`DockerSandbox` containers and reaps the ones an earlier run left.

    ``client`` defaults to ``docker.from_env()`` (``DOCKER_HOST`` and friends). Containers are
    labelled ``<label_prefix>.task_id``, ``.arvo_id``, ``.managed=1`` and, with an ``owner``,
    ``.owner=<owner>``; :meth:`reap` finds them by ``managed`` (and ``owner``, so several green
    replicas sharing one engine only reap their own). Pid 1 is :data:`KEEPER` (``init`` is
    accepted for compatibility and ignored: Docker's init would exit with its child).
    """

    def __init__(
        self,
        client: docker.DockerClient | None = None,
        label_prefix: str = "arena",
        *,
        owner: str | None = None,
        init: bool = True,
    ) -> None:
        self._client = client if client is not None else docker.from_env()
        self._prefix = label_prefix
        self._owner = owner
        self._init = init
        self._ncpu: int | None = None

    @property
    def client(self) -> docker.DockerClient:
        return self._client

    @property
    def managed_label(self) -> str:
        return f"{self._prefix}.managed=1"

    def create(self, spec: SandboxSpec) -> DockerSandbox:
        """Pull the image when absent, create and start the container. Raises ImageNotFound,
        SandboxError."""
        self._ensure_image(spec.image)
        name = f"arvo_{re.sub(r'[^A-Za-z0-9_.-]', '-', spec.arvo_id)}_{secrets.token_hex(4)}"
        labels = {
            **spec.labels,
            f"{self._prefix}.task_id": spec.task_id,
            f"{self._prefix}.arvo_id": spec.arvo_id,
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
            "privileged": False,
            "security_opt": ["no-new-privileges"],
            "cap_drop": DROPPED_CAPS,
            "mem_limit": spec.memory,
            "memswap_limit": spec.memory,  # no swap on top of the memory limit
            "nano_cpus": int(min(spec.cpus, self._host_cpus()) * 1e9),
            "pids_limit": spec.pids_limit,
            "ulimits": [Ulimit(name="core", soft=0, hard=0)],
        }
        if spec.disk_limit:  # no single file past the cap (the watchdog sees the sum)
            options["ulimits"].append(
                Ulimit(name="fsize", soft=spec.disk_limit, hard=spec.disk_limit)
            )
        if not spec.network:
            options["network_mode"] = "none"
        try:
            container = self._client.containers.create(spec.image, **options)
        except docker.errors.APIError as e:
            raise SandboxError(f"cannot create {name} from {spec.image}: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot create {name}: the engine failed: {e}") from e
        try:
            container.start()
        except ENGINE_ERRORS as e:
            with contextlib.suppress(*ENGINE_ERRORS):  # else the janitor's sweep removes it
                container.remove(force=True, v=True)
            raise SandboxError(f"cannot start {name}: {getattr(e, 'explanation', e)}") from e
        return DockerSandbox(self._client, container, spec)

    def reap(self, keep: Callable[[str], bool] | None = None) -> list[str]:
        """Remove every container labelled ``<prefix>.managed=1`` (and ``<prefix>.owner=<owner>``
        when this provider has an owner), running or not, except those whose task id ``keep``
        accepts."""
        labels = [self.managed_label]
        if self._owner:
            labels.append(f"{self._prefix}.owner={self._owner}")
        try:
            leftovers = self._client.containers.list(all=True, filters={"label": labels})
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot list containers: {getattr(e, 'explanation', e)}") from e
        names = []
        for container in leftovers:
            if keep is not None and keep(container.labels.get(f"{self._prefix}.task_id", "")):
                continue
            try:
                container.remove(force=True, v=True)
                names.append(container.name)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:  # e.g. 409: a removal is already in progress
                if e.status_code != 409:
                    raise SandboxError(f"cannot remove {container.name}: {e.explanation}") from e
            except ENGINE_ERRORS as e:
                raise SandboxError(f"cannot remove {container.name}: {e}") from e
        return names

    def ping(self) -> bool:
        try:
            return bool(self._client.ping())
        except Exception:
            return False

    def _ensure_image(self, image: str) -> None:
        try:
            self._client.images.get(image)
            return
        except docker.errors.ImageNotFound:
            pass
        except docker.errors.APIError as e:
            raise SandboxError(f"cannot inspect image {image}: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise SandboxError(f"cannot inspect image {image}: the engine failed: {e}") from e
        try:
            self._client.images.pull(image)
        except ENGINE_ERRORS as e:
            raise ImageNotFound(
                f"image {image!r} is not present on the Docker host and could not be pulled: "
                f"{getattr(e, 'explanation', None) or e}"
            ) from e

    def _host_cpus(self) -> float:
        if self._ncpu is None:
            try:
                self._ncpu = int(self._client.info().get("NCPU", 0)) or 1 << 16
            except ENGINE_ERRORS as e:
                raise SandboxError(f"cannot ask the engine for its CPUs: {e}") from e
        return float(self._ncpu)


def _absolute(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"container paths must be absolute: {path!r}")
    return posixpath.normpath(path)


def _member_name(dest: str, relpath: str) -> str:
    """``dest/relpath`` relative to ``/``; refuses absolute paths and ``..`` escapes."""
    rel = posixpath.normpath(relpath)
    if rel.startswith("/") or rel == ".." or rel.startswith("../") or rel in ("", "."):
        raise ValueError(f"bad relative path: {relpath!r}")
    return posixpath.join(dest, rel).lstrip("/")


def _extract_single(path: str, stream: Iterator[bytes], stat: dict[str, Any], limit: int) -> bytes:
    """The content of the one regular file in a ``get_archive`` stream, at most ``limit`` bytes."""
    if int(stat.get("mode", 0)) & _GO_MODE_DIR:
        raise UnreadableFile(f"{path} is a directory")
    if int(stat.get("size", 0)) > limit:
        raise UnreadableFile(f"{path} is {stat['size']:,} bytes, more than {limit:,}")
    buf = bytearray()
    for chunk in stream:  # the file may have grown since the stat: stay bounded anyway
        buf += chunk
        if len(buf) > limit + 64 * 1024:  # room for tar headers and padding
            raise UnreadableFile(f"{path} is larger than {limit:,} bytes")
    with tarfile.open(fileobj=io.BytesIO(buf)) as tar:
        member = tar.next()
        if member is None or not member.isfile():
            raise UnreadableFile(f"{path} is not a regular file")
        data = tar.extractfile(member)
        content = data.read(limit + 1) if data else b""
    if len(content) > limit:
        raise UnreadableFile(f"{path} is larger than {limit:,} bytes")
    return content
