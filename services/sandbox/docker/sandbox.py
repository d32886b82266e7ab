"""One task container on a Docker engine: the Docker implementation of :class:`Sandbox`.

Everything goes through the Engine API (files are copied in and out with ``put_archive`` /
``get_archive``, never bind-mounted), so green works the same against the local socket, from
inside a container with the host's socket mounted, or against a remote engine. Every command
runs through one persistent :class:`~services.sandbox.framing.ShellSession` over the exec
socket (:mod:`.transport`); docker-py's blocking calls run in the provider's thread pool.

Error policy: a failing, hanging or session-killing command is a :class:`CommandResult`
(``exit_code=-1`` when it did not finish). A container that stopped during a command anyway
(the memory limit, the disk limit, anything else the engine does not explain) raises
:class:`AgentFault`; a container that is gone for another reason (green removed it, someone
removed it from outside, the engine is unreachable) raises :class:`SandboxError` (an
:class:`EngineUnreachable` when the engine does not answer), so the orchestrator can tell an
infrastructure failure from an agent's.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor
from typing import Any, BinaryIO

import docker
import docker.errors
from docker.models.containers import Container

from services.sandbox.base import AgentFault, ExecFailed, SandboxError, SandboxSpec
from services.sandbox.docker.archive import (
    absolute,
    files_tar,
    read_regular_file,
    stream_tree,
)
from services.sandbox.docker.diagnosis import (
    SessionKilled,
    diagnose,
    kill_failed_in_a_live_container,
    raise_if_stopped,
    unstoppable,
)
from services.sandbox.docker.disk import (
    QUOTA_TEXT,
    DiskWatch,
    QuotaWatch,
    quota_full,
)
from services.sandbox.docker.errors import ENGINE_ERRORS, engine_error
from services.sandbox.docker.images import image_identity
from services.sandbox.docker.transport import EXEC_DEADLINE, DockerExecTransport, run_setup
from services.sandbox.docker.unjam import unjam
from services.sandbox.docker.usage import LayerUsage
from services.sandbox.framing import SessionLost, SessionNotStarted, ShellSession
from services.shared.commands import CommandResult
from services.shared.logging import get_logger

log = get_logger("services.sandbox.docker")

MAKE_PRIVATE = 'rm -rf -- "$1" && mkdir -m 0711 -- "$1" && chown 0:0 -- "$1"'
"""Makes green's own folder (``spec.private_dir``: ``$1``, a child of ``/``)."""


class DockerSandbox:
    """One task container. Safe for concurrent coroutines: a lock serializes commands and
    file transfers; :meth:`remove` may be called at any time (it interrupts a running command,
    which then raises SandboxError)."""

    def __init__(
        self,
        client: docker.DockerClient,
        container: Container,
        spec: SandboxSpec,
        executor: Executor,
        *,
        engine: str = "local",
        on_removed: Callable[[DockerSandbox], None] | None = None,
        on_unremoved: Callable[[DockerSandbox], None] | None = None,
        quota: int | None = None,
    ) -> None:
        self._client = client
        self._container = container
        self.spec = spec
        self._executor = executor
        self._engine = engine
        self._on_removed = on_removed
        self._on_unremoved = on_unremoved
        """Hears that green could not remove the container (jammed, its engine away)."""
        self._transport = DockerExecTransport(client.api, container.id, executor)
        self._lock = asyncio.Lock()
        self._session: ShellSession | None = None
        self._sessions = 0  # shell sessions that started: a later one that cannot is not infra
        self._removed = False
        self.lost: str | None = None
        """Why the sandbox can no longer be used although nothing failed yet (its engine
        stopped answering); None while all is well."""
        self._unmeasured: str | None = None  # why the container was stopped unmeasured
        on_unknown = self._stop_unmeasured if spec.unmeasured_stops else None
        self._usage = LayerUsage(client.api, container, spec, on_unknown, lambda: self._removed)
        self._private_made = False
        self._handed_over = spec.agent_uid is None  # the agent's paths are its own: root is done
        self._created_at = int(time.time()) - 60  # events since then (slack for clock skew)
        self.quota = quota
        """The disk quota the engine's file system enforces (bytes); None: the cap is watched."""
        self._disk: DiskWatch | None = None
        if spec.disk_limit and quota:
            self._disk = QuotaWatch(
                self._quota_full, spec.disk_limit, spec.disk_check_s, self._stop_for_disk
            )
        elif spec.disk_limit:
            self._disk = DiskWatch(
                self.disk_used,
                spec.disk_limit,
                spec.disk_check_s,
                self._stop_for_disk,
                on_unknown,
                engine_used=self._usage.engine_disk_used,
                frozen=self._usage.frozen,
                engine_ref=self._usage.engine_reference,
            )

    @property
    def name(self) -> str:
        return self._container.name

    @property
    def id(self) -> str:
        return self._container.id

    @property
    def engine(self) -> str:
        return self._engine

    @property
    def disk_unknown(self) -> str | None:
        """Why the disk use is unknown lately (:data:`~.disk.UNKNOWN_AFTER` measurements, or
        scans of open files, failed in a row); None while they work or without a watched cap."""
        if self._disk is None or self.quota:
            return None
        return self._disk.failures.unknown or self._usage.scans.unknown

    def image_facts(self) -> dict[str, Any]:
        """The container's image by digest (``Id``, as ``docker image inspect`` gives it), its
        registry digests and tags, its identity (:func:`image_identity`: the same for the same
        image built or pulled elsewhere), and the engine's version. Blocking: call in a thread."""
        image = self._client.images.get(self._container.attrs["Image"])
        return {
            "id": image.id,
            "identity": image_identity(image.attrs),
            "repo_digests": list(image.attrs.get("RepoDigests") or []),
            "tags": list(image.tags),
            "engine_version": self._client.version().get("Version"),
        }

    def __repr__(self) -> str:
        return f"DockerSandbox({self.name!r} on {self._engine!r})"

    async def __aenter__(self) -> DockerSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.remove()

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # -- commands --------------------------------------------------------------------------

    async def exec(self, command: str, timeout: float) -> CommandResult:
        """Run ``command`` through the persistent shell session (opened on first use and
        reopened transparently when it died). Raises AgentFault when the container stopped
        (see :meth:`_diagnose`), SandboxError when it is gone for another reason."""
        async with self._lock:
            self._usage.command_started()  # no file held deleted-but-open: none outlives one
            try:
                if self._disk:  # only its first start measures (the baseline): off the loop
                    if self._disk.baseline is None:
                        await self._live_session()  # after the hand-over: not the agent's bytes
                        await self._io(self._disk.start)
                    else:
                        self._disk.start()
                result = await self._exec(command, timeout)
            except SandboxError as e:
                raise await self._diagnose(e) from e
            finally:
                self._usage.command_ended()
                if self._disk:
                    self._disk.pause()
            if self._disk and self._disk.unmeasured():  # writes no measurement saw
                await self._io(self._disk.measure_now)
            if self._disk and self._disk.exceeded is not None:  # stopped, the engine slow to say
                raise self._disk_fault()
            if self._unmeasured is not None:
                raise self._unmeasured_fault()
            if self.quota and (  # the command met the quota, or a probe does now
                QUOTA_TEXT in result.output or await self._io(self._quota_full)
            ):
                raise self._disk_fault()
            return result

    async def _exec(self, command: str, timeout: float) -> CommandResult:
        for attempt in (1, 2):
            session = await self._live_session()
            try:
                result = await session.run(command, timeout, self.spec.output_limit)
            except SessionLost as e:
                self._session = None
                if self._removed:
                    raise SandboxError(f"{self.name}: {e}") from e
                if attempt == 2:
                    raise SessionKilled(f"{self.name}: {e}, twice") from e
                continue
            if self._removed:  # remove() interrupted the command
                raise SandboxError(f"{self.name} was removed while the command ran")
            if not session.alive:  # the session died mid-command: with the container?
                await self._io(raise_if_stopped, self._client.api, self.id, self.name)
            return result
        raise AssertionError("unreachable")

    async def _diagnose(self, error: SandboxError) -> Exception:
        """Why a command lost its container (see :mod:`.diagnosis`); green's own removal and
        the disk watchdog's stop are known here."""
        if self._disk and self._disk.exceeded is not None:
            return self._disk_fault()
        if self._unmeasured is not None:
            return self._unmeasured_fault()
        if self._removed:
            return error
        api, since, spec = self._client.api, self._created_at, self.spec
        if isinstance(error, ExecFailed) and await self._io(  # a kill failed
            kill_failed_in_a_live_container, api, self.id, since
        ):
            return await self._io(
                lambda: unstoppable(
                    api, self.id, self.name, error, pids=spec.pids_limit, cpus=spec.cpus
                )
            )
        return await self._io(
            lambda: diagnose(api, self.id, self.name, error, memory=spec.memory, since=since)
        )

    def _disk_fault(self) -> AgentFault:
        if self.quota or self._disk is None:
            return AgentFault(
                "disk_limit",
                f"the task's commands filled the container's disk quota ({self.quota:,} "
                f"bytes with the image, {self.spec.disk_limit or 0:,} for the task), which the "
                "engine's file system enforces: writes failed with 'Disk quota exceeded'",
            )
        return AgentFault(
            "disk_limit",
            f"the task's commands wrote {self._disk.exceeded or 0:,} bytes into the container "
            f"at {self._disk.rate / 2**20:,.0f} MiB/s, past or about to pass its disk "
            f"limit ({self._disk.limit:,} bytes); the container was stopped",
        )

    def _unmeasured_fault(self) -> AgentFault:
        return AgentFault(
            "disk_unmeasured",
            f"the container's disk use could no longer be measured while the task's code ran "
            f"({self._unmeasured}); with its cap unwatched, the container was stopped",
        )

    def _stop_unmeasured(self, why: str) -> None:
        """The disk use turned unknown (``spec.unmeasured_stops``): stop the container now."""
        if self._removed or self._unmeasured is not None:
            return
        self._unmeasured = why
        log.warning("disk.unmeasured_stop", container=self.name, error=why[-300:])
        with contextlib.suppress(*ENGINE_ERRORS, docker.errors.APIError):
            self._client.api.kill(self.id)

    def _quota_full(self) -> bool:
        return quota_full(self._client.api, self.id)

    async def _live_session(self) -> ShellSession:
        if self._removed:
            raise SandboxError(f"{self.name} was removed")
        if self._session is None or not self._session.alive:
            spec = self.spec
            await self._make_private_locked()  # the caller holds the lock
            session = ShellSession(
                self._transport, spec.workdir, uid=spec.agent_uid, home=spec.agent_home
            )
            hand_over = () if self._handed_over else (spec.agent_home, *spec.writable)
            try:
                await session.open(hand_over)
            except SessionNotStarted as e:
                if self._sessions and not self._removed:  # one started here before
                    raise SessionKilled(f"{self.name}: {e}") from e
                raise
            self._session = session
            self._sessions += 1
            self._handed_over = True
        return self._session

    def disk_used(self) -> int | None:
        """What the task holds on the engine's disk (blocking; :meth:`.usage.LayerUsage.measure`)."""
        return self._usage.measure()

    def _stop_for_disk(self, size: int) -> None:
        try:
            self._client.api.kill(self.id)  # the running command's exec sees its session end
        except docker.errors.APIError as e:
            if e.status_code != 409:  # 409: not running (the watch killed it from the host)
                raise

    # -- files -----------------------------------------------------------------------------

    async def setup(self, command: str, timeout: float) -> CommandResult:
        """Green's own ``command`` as root, to its end within ``timeout`` s (a one-off exec,
        not the agent's session); before the agent's first command only."""
        self._before_the_agent("run its own commands as root")
        started = time.monotonic()

        def run() -> tuple[int | None, bytes]:
            with self._api_errors("set the container up"):
                return run_setup(self._client.api, self.id, ["/bin/sh", "-c", command], timeout)

        async with self._lock:
            code, out = await self._io(run)
        return CommandResult(
            exit_code=-1 if code is None else code,
            output=out.decode("utf-8", "replace"),
            duration_s=time.monotonic() - started,
        )

    async def _make_private(self) -> None:
        """Make ``spec.private_dir`` (once, before anything is copied in or run): empty,
        root's, ``0711``."""
        if self.spec.private_dir is not None and not self._private_made:
            async with self._lock:
                await self._make_private_locked()

    async def _make_private_locked(self) -> None:
        folder = self.spec.private_dir
        if folder is None or self._private_made:
            return

        def make() -> tuple[int | None, bytes]:
            with self._api_errors(f"make {folder}"):
                argv = ["/bin/sh", "-c", MAKE_PRIVATE, "sh", folder]
                return run_setup(self._client.api, self.id, argv, EXEC_DEADLINE)

        code, out = await self._io(make)
        if code != 0:
            said = out.decode(errors="replace")[-300:]
            raise SandboxError(f"{self.name}: cannot make {folder}: {said}")
        self._private_made = True

    def _private(self, dest: str) -> bool:
        """Whether ``dest`` is in green's own folder (``spec.private_dir``)."""
        folder = self.spec.private_dir
        return folder is not None and (dest == folder or dest.startswith(folder + "/"))

    def _before_the_agent(self, what: str) -> None:
        """Root acts in the container (green's set-up, files copied in through the engine) only
        before the agent's first command: after it, a path green names may be the agent's link
        to a file of root's."""
        if self._handed_over and self.spec.agent_uid is not None:
            raise SandboxError(f"{self.name}: green may {what} only before the agent's commands")

    async def put_files(self, dest_dir: str, files: Mapping[str, bytes]) -> None:
        """Write ``dest_dir/<relpath>`` for each entry (mode 0644, owner root). Parents are
        created by the engine while extracting (mode 0755); existing directories keep their
        mode because the archive holds file entries only. Before the agent's first command,
        or into ``spec.private_dir`` at any time."""
        dest = absolute(dest_dir)
        if self._private(dest):
            await self._make_private()
        else:
            self._before_the_agent("copy files in")
        if not files:
            await self._mkdir(dest)
            return
        await self._put("/", files_tar(dest, files))

    async def put_archive(self, dest_dir: str, archive: bytes | BinaryIO) -> None:
        """Extract a tar (plain, gzip, bzip2 or xz: the engine decompresses) into ``dest_dir``;
        an open file is streamed to the engine. Before the agent's first command."""
        self._before_the_agent("copy files in")
        dest = absolute(dest_dir)
        await self._mkdir(dest)
        await self._put(dest, archive)

    async def read_file(self, path: str, max_bytes: int = 1 << 20) -> bytes:
        """Read one regular file through ``get_archive``, streamed and bounded: a file larger
        than ``max_bytes`` is refused without being read whole. A symbolic link (the file, or a
        directory on its path), a directory, a fifo or a device is refused (UnreadableFile),
        never followed: what the agent left there, not infra, and no error names more than
        ``path``."""
        path = absolute(path)
        async with self._lock:
            return await self._io(self._read_file, path, max_bytes)

    def _read_file(self, path: str, max_bytes: int) -> bytes:
        with self._api_errors(f"read {path}", missing=FileNotFoundError):
            return read_regular_file(self._client.api, self.id, path, max_bytes)

    async def read_tree(self, path: str, out: BinaryIO, max_bytes: int) -> None:
        """Write the engine's tar of the directory ``path`` to ``out`` (at most ``max_bytes``;
        links inside are archived as links, never followed)."""
        path = absolute(path)

        def read() -> None:
            with self._api_errors(f"read {path}", missing=FileNotFoundError):
                stream_tree(self._client.api, self.id, path, out, max_bytes)

        async with self._lock:
            await self._io(read)

    async def _put(self, dest: str, data: bytes | BinaryIO) -> None:
        def put() -> None:
            with self._api_errors(f"copy into {dest}"):
                if not self._container.put_archive(dest, data):
                    raise SandboxError(f"{self.name}: the engine refused the archive for {dest}")

        async with self._lock:
            await self._io(put)

    async def _mkdir(self, dest: str) -> None:
        def mkdir() -> tuple[int | None, bytes]:
            with self._api_errors(f"mkdir {dest}"):
                argv = ["mkdir", "-p", "--", dest]
                return run_setup(self._client.api, self.id, argv, EXEC_DEADLINE)

        async with self._lock:
            code, out = await self._io(mkdir)
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
            raise missing(f"cannot {what}: no such file or directory") from e
        except docker.errors.APIError as e:
            raise SandboxError(f"{self.name}: cannot {what}: {e.explanation or e}") from e
        except ENGINE_ERRORS as e:
            raise engine_error(e, f"{self.name}: cannot {what}") from e

    # -- lifecycle -------------------------------------------------------------------------

    async def remove(self) -> None:
        """Kill and delete the container and its anonymous volumes. Idempotent; a running
        command is interrupted (its ``exec`` raises SandboxError)."""
        self._removed = True
        if self._disk:
            self._disk.stop()
        try:
            await self._io(self._remove_container)
        except SandboxError:
            if self._on_unremoved is not None:
                self._on_unremoved(self)
            raise
        finally:
            if self._session is not None:
                self._session.abort()  # wakes a concurrent exec, which then gives up
        async with self._lock:
            if self._session is not None:
                self._session.close()
                self._session = None
        if self._on_removed is not None:
            self._on_removed(self)

    def _remove_container(self) -> None:
        """``docker rm -f``; one that fails falls back on a container jammed (a process of
        it stopped mid-exec, its cgroup frozen): it is killed through the engine and, on a
        local engine, through its cgroups (:func:`.unjam.unjam`), and the removal is tried once
        more. Raises SandboxError when that fails too (the provider hears of it: the container
        then takes no slot, and is retried)."""
        try:
            self._remove_once()
        except SandboxError as error:
            if not unjam(self._client.api, self.id, self.name, error):
                raise
            self._remove_once()

    def _remove_once(self) -> None:
        try:
            self._container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if e.status_code != 409:  # 409: removal already in progress
                raise SandboxError(f"cannot remove {self.name}: {e.explanation}") from e
        except ENGINE_ERRORS as e:
            raise engine_error(e, f"cannot remove {self.name}") from e
