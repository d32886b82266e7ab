"""A local engine's task container seen from the engine's host, for a watched disk cap: the
bytes its processes hold in files deleted but still open, and how full the engine's disk is.

Where green runs on the engine's host with the rights to see it (a local engine, green as root
in the host's pid namespace, as the test suite runs it; not the compose stack's green, in
its container), both are far cheaper than anything through the
engine. The container's processes are its cgroup's (``cgroup.procs``, :func:`.unjam.container_cgroups`),
and their open files are read from the host's ``/proc/<pid>/fd``: a few system calls per file,
against an exec in the container, so the scan runs at every measurement of the watch, not once
an interval (:class:`~.usage.LayerUsage`). Green's root on the host reads a process the agent
made non-dumpable like any other. The data root's ``statvfs`` is one system call that sees
every block the engine's file system gave out, delayed allocations (ext4's dirty pages) and
``fallocate`` reservations included: the watch's tripwire (:class:`~.disk.DiskWatch`).
Elsewhere (a remote engine, green in a container) :meth:`HostSide.of` is None and the scan runs
in the container (:func:`.disk.hidden_bytes`), without a tripwire.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from services.sandbox.docker.disk import LOCAL_ENGINE, MeasurementFailed
from services.sandbox.docker.unjam import CGROUPS, container_cgroups

MEMORY_FS = frozenset({"tmpfs", "ramfs", "devtmpfs", "mqueue", "proc", "sysfs", "devpts"})
"""File systems whose files live in memory (charged to the container's memory limit, or not
the agent's to fill): a file deleted there is no disk use."""
MOST_FDS = 1 << 16
"""Open descriptors a scan at a measurement reads at most (all the container's processes
together: about 0.7 s of green's time on a slow machine, at 10 us a descriptor). Past them
(:class:`TooManyOpen`) the scan runs in a thread of its own beside the watch: an agent that
opens that many gets its held files counted one such scan late, never the watch slowed."""
CROWD_MOST = 1 << 22
"""Open descriptors such a scan reads at most (about 40 s at 10 us each); past them it fails
(a failed scan, retried: the disk use is unknown after a few in a row)."""
PROC = Path("/proc")


class TooManyOpen(MeasurementFailed):
    """The container's processes hold more descriptors than a scan reads."""


class HostSide:
    """One container's processes and its engine's disk, from the engine's host."""

    def __init__(self, folders: list[Path], disk_devices: frozenset[int], data_root: str) -> None:
        self._folders = folders
        self._procs = folders[0] / "cgroup.procs"
        self._devices = disk_devices
        self.data_root = data_root
        """A path on the engine's file system (the container's writable layer)."""
        self.read = 0
        """Descriptors the last scan read (as far as its bound)."""

    @classmethod
    def of(
        cls, base_url: str, container: Mapping[str, Any], cgroups: Path = CGROUPS
    ) -> HostSide | None:
        """For a running container as the engine inspects it (``State.Pid`` set); None unless
        green sees it from its engine's host: a local engine's overlay2 layer on green's disk,
        its cgroup in view, its first process in green's ``/proc`` (the host's pid namespace)."""
        graph = container.get("GraphDriver") or {}
        upper = (graph.get("Data") or {}).get("UpperDir")
        pid = int((container.get("State") or {}).get("Pid") or 0)
        if base_url != LOCAL_ENGINE or graph.get("Name") != "overlay2" or not upper or pid <= 0:
            return None
        folders = container_cgroups(str(container.get("Id") or ""), cgroups)
        if not folders or not os.path.isdir(upper):
            return None
        procs = folders[0] / "cgroup.procs"
        try:
            if str(pid) not in procs.read_text().split():  # another pid namespace's numbers
                return None
            mounts = (PROC / str(pid) / "mountinfo").read_text()
            os.listdir(PROC / str(pid) / "fd")
        except OSError:
            return None
        return cls(folders, disk_devices(mounts), upper)

    def held(self, most: int = MOST_FDS) -> int:
        """Bytes the blocks of files deleted but still open hold (each file once; those on a
        memory file system, and memfds, aside), over the container's processes now (blocking).
        Raises MeasurementFailed when its cgroup is gone, TooManyOpen when its processes hold
        more than ``most`` descriptors."""
        try:
            pids = self._procs.read_text().split()
        except OSError as exc:
            raise MeasurementFailed(f"the container's processes cannot be listed: {exc}") from exc
        seen: dict[tuple[int, int], int] = {}
        read = self.read = 0
        for pid in pids:
            folder = f"/proc/{pid}/fd"
            try:
                fds = os.listdir(folder)
            except OSError:  # it ended meanwhile
                continue
            read += len(fds)
            self.read = read
            if read > most:
                raise TooManyOpen(f"the container's processes hold more than {most:,} files")
            for fd in fds:
                path = f"{folder}/{fd}"
                try:
                    if not os.readlink(path).endswith(" (deleted)"):
                        continue
                    st = os.stat(path)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 0 and st.st_dev in self._devices:
                    seen[(st.st_dev, st.st_ino)] = st.st_blocks * 512
        return sum(seen.values())

    @contextlib.contextmanager
    def frozen(self) -> Iterator[Callable[[], None]]:
        """The container's processes stopped by the kernel's freezer while the block runs (its
        cgroup's ``freezer.state``, v1; ``cgroup.freeze``, v2): a writer stops at once, and a
        measurement taken meanwhile is of a layer that does not change. The block gets
        :meth:`kill`: a process killed while frozen dies as it thaws, writing nothing more
        (the engine's own kill waits for the processes to end, which they cannot while
        frozen). Thawed on leaving, whatever happened; a freezer green cannot write is no
        freeze (the block runs all the same)."""
        thaw = []
        for folder in self._folders:
            for name, on, off in (
                ("freezer.state", "FROZEN", "THAWED"),
                ("cgroup.freeze", "1", "0"),
            ):
                path = folder / name
                with contextlib.suppress(OSError):
                    if path.is_file():
                        path.write_text(on)
                        thaw.append((path, off))
        try:
            yield self.kill
        finally:
            for path, off in thaw:
                with contextlib.suppress(OSError):
                    path.write_text(off)

    def kill(self) -> None:
        """``SIGKILL`` to every process of the container (its keeper, pid 1 of its namespace,
        included: from the host's namespace the kernel delivers it)."""
        with contextlib.suppress(OSError):
            for pid in self._procs.read_text().split():
                with contextlib.suppress(OSError):
                    if int(pid) > 0:
                        os.kill(int(pid), signal.SIGKILL)

    def disk_used(self) -> int:
        """Bytes in use on the engine's file system (``statvfs`` of the data root: one system
        call)."""
        fs = os.statvfs(self.data_root)
        return (fs.f_blocks - fs.f_bfree) * fs.f_frsize


def disk_devices(mountinfo: str) -> frozenset[int]:
    """The devices (``st_dev``) of the mounts in ``mountinfo`` (a ``/proc/<pid>/mountinfo``)
    whose files are on a disk: every file system but :data:`MEMORY_FS`."""
    devices = set()
    for line in mountinfo.splitlines():
        fields, sep, rest = line.partition(" - ")
        parts = fields.split()
        if not sep or len(parts) < 3 or not rest or rest.split()[0] in MEMORY_FS:
            continue
        major, _, minor = parts[2].partition(":")
        if major.isdigit() and minor.isdigit():
            devices.add(os.makedev(int(major), int(minor)))
    return frozenset(devices)
