"""The disk cap of a task container: enforced by the engine's file system, or watched.

Where the engine's storage driver enforces ``storage_opt size`` (btrfs qgroups; overlay2 over
XFS with project quotas), the provider gives the container a quota and the file system refuses
writes past it (``EDQUOT``), deleted-but-open files and directories included. While a command
runs (:class:`QuotaWatch`) and after it, :func:`quota_full` writes a small probe as root; a
probe the quota refuses, or a command whose output says "Disk quota exceeded" (a quota may
have room for a probe again once the command's writes are committed or freed), ends the task
as the agent's ``disk_limit``. Elsewhere the cap is
watched:

Docker's default storage (overlay2 on ext4) refuses ``storage_opt size``, and a tmpfs is
invisible to the archive API green reads submissions through, so the cap is enforced from
outside. Two parts:

- ``RLIMIT_FSIZE`` (set by the provider) stops any single file at the cap at once
  (``SIGXFSZ``/``EFBIG``), so one big write never gets past it;
- :class:`DiskWatch` measures the writable layer (the engine's ``SizeRw``) while a command
  runs, every ``interval`` seconds and more often as a fast writer nears the cap; over the
  cap it calls ``on_exceeded`` (the sandbox kills the container, and the task ends as the
  agent's ``disk_limit``). Seen from the engine's host (:mod:`.hostside`), a tripwire
  (:meth:`DiskWatch._wait`) keeps written data within 1.5 times the cap at any writer's speed
  (``tests/sandbox/test_disk_watch_bound.py``); not a reservation (``fallocate``, one system
  call) nor a flood of directories (``SizeRw`` ignores them): docs/engines.md.
  A command that ends before a recent measurement of it (a busy engine answers slowly; a burst
  of writers finishes first) is measured once more as it ends (:meth:`DiskWatch.unmeasured`,
  :meth:`DiskWatch.measure_now`), so its writes end this command, not the next one.

Between commands nothing of the agent runs (every process but pid 1 is killed when a command
ends), so the size is measured only now and then (every ``IDLE_FACTOR`` intervals). The measure
the sandbox gives the watch also counts what ``SizeRw`` misses: files deleted but still open
(scanned from the engine's host at every measurement; elsewhere a scan in the container, at most
once an interval and not in a command's first: nothing of the agent's outlives a command, so it
starts with none) and a cost per entry of the layer
(:class:`LayerEntries`). What stays unseen
is the file system's metadata beyond that cost.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import docker.errors
from docker import APIClient

from services.sandbox.base import SandboxError
from services.sandbox.docker.transport import EXEC_DEADLINE, run_to_end
from services.shared.logging import get_logger

log = get_logger("services.sandbox.disk")

IDLE_FACTOR = 10
"""Between commands the size is measured every ``IDLE_FACTOR`` times the interval."""
MIN_WAIT = 0.05
"""Shortest pause between two measurements (seconds)."""
FIRST_WAIT = 0.1
"""First measurement of a command, before its write rate is known (seconds)."""
STOP_LAG = 0.25
"""Seconds between deciding to stop a writer and its last byte (measurement, the engine's
kill): a command whose size plus this much writing at its current rate would pass the cap is
stopped now, so the cap holds for fast writers too."""
TRIP_EVERY = 0.02
"""Seconds between two looks of the tripwire at the engine's disk (:meth:`DiskWatch._wait`)."""
UNKNOWN_AFTER = 3
"""Measurements that failed in a row (retried each time) before a task's disk use is
*unknown*: the operator is told (the task's events, ``/healthz``) until one works again."""


PROBE = (
    'd=/.arena-probe-$$; mkdir "$d" 2>&1 && dd if=/dev/zero of="$d/f" bs=65536 count=16'
    ' conv=fsync 2>&1; r=$?; rm -rf "$d"; exit $r'
)
"""Makes a directory (metadata) and writes 1 MiB (data, fsynced) in it at the container's root,
then removes both; its output names the error."""
HIDDEN = (
    "command -v find >/dev/null && command -v awk >/dev/null || exit 127; "
    "find -L /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -type f -links 0 ! -fstype tmpfs"
    " -printf '%D %i %b\\n' 2>/dev/null | sort -u | awk '{t += $3} END {print t * 512 + 0}'"
)
"""Bytes held by files deleted but still open (each counted once, tmpfs and memfd aside),
from every process's ``/proc/<pid>/fd``: what the engine's ``SizeRw`` cannot see."""
INODE_BYTES = 4096
"""What each entry of the writable layer costs beyond its size (ext4: an inode and, for a
directory, a block), which ``SizeRw`` does not count."""


class MeasurementFailed(RuntimeError):
    """A measurement of the container's disk use did not give a figure (the engine could not
    run it, it failed, it did not end in time): never read as 0 bytes."""


def hidden_bytes(api: APIClient, container_id: str) -> int:
    """:data:`HIDDEN`, run as root in the container, bounded by
    :data:`~.transport.EXEC_DEADLINE` (blocking). Root keeps ``CAP_SYS_PTRACE`` in the
    container (the agent's processes, another uid, cannot use it), so a process that made
    itself non-dumpable is scanned like any other. Raises MeasurementFailed unless the scan
    exited 0 with one number as its output (an error the engine wrote in its stead included)."""
    try:
        code, out = run_to_end(api, container_id, ["/bin/sh", "-c", HIDDEN], EXEC_DEADLINE)
    except SandboxError as exc:
        raise MeasurementFailed(f"the scan of open files did not run: {exc}") from exc
    text = out.decode("utf-8", "replace").strip()
    if code != 0 or not text.isdigit():
        raise MeasurementFailed(f"the scan of open files failed (exit {code}): {text[-300:]!r}")
    return int(text)


LOCAL_ENGINE = "http+docker://localhost"
"""docker-py's address of an engine reached over a unix socket (a TCP or ssh engine is another
host's, and so are the paths it names)."""


TOO_DEEP = "file name too long"
"""strerror(ENAMETOOLONG), in the error of an engine's diff that met a path longer than
``PATH_MAX``: the agent's chain of directories hides the layer from the engine's count, and
such a layer counts as past the cap (else every entry made after the chain would go unseen)."""


class LayerEntries:
    """Counts the entries of a container's writable layer: every file, directory, link and
    whiteout the container added or changed, each an inode on the engine's disk. Where green
    sees the engine's disk (a local engine's overlay2, green on its host and allowed to read
    the engine's data root), ``find`` walks the layer's directory: a few milliseconds of
    green's host for what the agent wrote. Elsewhere (a remote engine, green in a container,
    another storage driver) the engine's ``diff`` lists the same entries, walking the
    container's whole tree: about a third of a second of the engine's CPU for an ARVO task.
    Both count the same (``tests/sandbox/test_sandbox_hostile.py``)."""

    def __init__(self, api: APIClient, container_id: str, layer: Path | None) -> None:
        self._api = api
        self._id = container_id
        self.layer = layer
        """The writable layer's directory on green's host; None: the engine's diff counts."""
        self.reserved = 0
        """Bytes the layer's files hold on disk beyond their sizes, as the last walk found
        (blocks reserved with ``fallocate``'s ``FALLOC_FL_KEEP_SIZE``, which ``SizeRw``, a sum
        of sizes, never sees); 0 where the engine's diff counts."""

    @classmethod
    def of(cls, api: APIClient, container: Mapping[str, Any]) -> LayerEntries:
        """For a container as the engine inspects it."""
        graph = container.get("GraphDriver") or {}
        upper = (graph.get("Data") or {}).get("UpperDir")
        local = graph.get("Name") == "overlay2" and api.base_url == LOCAL_ENGINE
        layer = Path(upper) if upper and local else None
        if layer is not None and not (
            layer.is_dir() and os.access(layer, os.R_OK | os.X_OK) and shutil.which("find")
        ):
            layer = None  # the socket is the engine's, the disk is not ours to read
        return cls(api, container["Id"], layer)

    def count(self, most: int | None = None) -> int:
        """How many entries the layer holds (blocking); with ``most``, at most ``most + 1``:
        past ``most`` the answer is only "too many", and a flood is not walked to its end."""
        if self.layer is not None:
            entries, self.reserved = count_entries(self.layer, most)
            return entries
        try:
            return len(self._api.diff(self._id) or [])
        except docker.errors.APIError as exc:
            if most is not None and TOO_DEEP in str(exc):  # the caller bounds only the agent's
                return most + 1
            raise


def count_entries(top: Path, most: int | None = None) -> tuple[int, int]:
    """Entries under the directory ``top``, and the bytes their blocks hold beyond their sizes
    (each size rounded up to a whole block of :data:`INODE_BYTES`), by GNU ``find`` (blocking): links are never followed and mounts never crossed, so an agent's
    link to ``/`` counts as one entry and the host's tree is never walked; a chain deeper than
    ``PATH_MAX`` is walked like any other. One short line is read per entry; with ``most``, the
    walk stops at ``most + 1``. Raises OSError when ``top`` is no longer there (its container is
    gone)."""
    argv = ["find", str(top), "-xdev", "-mindepth", "1", "-printf", "%b %s\\n"]
    seen = beyond = 0
    rest = b""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as find:
        assert find.stdout is not None
        while chunk := find.stdout.read1(1 << 16):
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            for line in lines:
                blocks, _, size = line.partition(b" ")
                whole = -(-int(size) // INODE_BYTES) * INODE_BYTES  # its last block, whole
                beyond += max(0, int(blocks) * 512 - whole)
            seen += len(lines)
            if most is not None and seen > most:
                find.kill()
                return most + 1, beyond
    if not top.is_dir():  # entries removed while walked are only missed; a gone layer fails
        raise FileNotFoundError(f"no layer at {top}")
    return seen, beyond


QUOTA_TEXT = "Disk quota exceeded"
"""strerror(EDQUOT): a command whose output says it met the quota ends the task as
``disk_limit`` (an agent that prints it without meeting the quota ends only its own task)."""
FULL = (QUOTA_TEXT, "No space left on device")


def quota_full(api: APIClient, container_id: str) -> bool:
    """Whether the container's quota refuses a 1 MiB write (blocking; as root, after a
    command, when nothing of the agent runs). Anything else that fails (the agent broke the
    tools, the container is gone) is not a full quota: False, logged."""
    try:
        code, raw = run_to_end(api, container_id, ["/bin/sh", "-c", PROBE], EXEC_DEADLINE)
    except SandboxError as exc:
        log.warning("disk.probe_failed", error=str(exc))
        return False
    out = raw.decode("utf-8", "replace")
    if code == 0:
        return False
    if any(text in out for text in FULL):
        return True
    log.warning("disk.probe_failed", error=out[-300:])
    return False


MOUNTINFO = Path("/proc/self/mountinfo")


def btrfs_updates_atime(path: str, mountinfo: str) -> bool | None:
    """Whether reading a directory under ``path`` writes its access time, by the options of
    the btrfs mount that holds it in ``mountinfo`` (the text of ``/proc/<pid>/mountinfo``);
    None when no btrfs mount holds it (another file system, or another host's path).

    It matters on an enforcing btrfs engine: an access time is a metadata write, and under a
    full quota every one forces a commit of the file system. The engine walks a container's
    tree before it removes it, so a container the agent filled with 150,000 directories took
    74 s of the engine's time to remove on a ``relatime`` mount, and 1.4 s with ``noatime``
    (``tests/sandbox/test_disk_quota.py``)."""
    best: tuple[str, list[str], str] | None = None
    for line in mountinfo.splitlines():
        fields, sep, rest = line.partition(" - ")
        parts = fields.split()
        if not sep or len(parts) < 6:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), parts[4])  # \040: " "
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, parts[5].split(","), rest.split()[0] if rest else "")
    if best is None or best[2] != "btrfs":
        return None
    return "noatime" not in best[1]


def local_btrfs_updates_atime(path: str) -> bool | None:
    """:func:`btrfs_updates_atime` for ``path`` as green's host mounts it; None when green
    cannot see that path (green in a container, the engine elsewhere)."""
    try:
        if not Path(path).is_dir():
            return None
        return btrfs_updates_atime(path, MOUNTINFO.read_text())
    except OSError:
        return None


class DiskWatch:
    """Measures ``measure()`` (bytes) while at least one :meth:`watching` block is open."""

    def __init__(
        self,
        measure: Callable[[], int | None],
        limit: int,
        interval: float,
        on_exceeded: Callable[[int], None],
        on_unknown: Callable[[str], None] | None = None,
        engine_used: Callable[[], int | None] | None = None,
        frozen: Callable[[], AbstractContextManager[Callable[[], None] | None]] | None = None,
        engine_ref: Callable[[], int | None] | None = None,
    ) -> None:
        self._measure = measure
        self._engine_used = engine_used  # bytes in use on the engine's file system (tripwire)
        self._engine_ref = engine_ref or engine_used  # what it grows from: all past it unseen
        self._frozen = frozen  # the container frozen in a block given a kill of its processes
        self._engine_at: int | None = None  # its figure as the last measurement started
        self._size = 0  # the last measurement's figure over the baseline
        self.limit = limit
        self._interval = interval
        self._on_exceeded = on_exceeded
        self._active = threading.Event()
        self._stop = threading.Event()
        self.exceeded: int | None = None
        """The size measured when the writer was stopped (over, or about to pass, the limit)."""
        self.rate = 0.0
        """Its write rate then (bytes per second)."""
        self.baseline: int | None = None
        """The size before the first command (not counted against the limit)."""
        self._command_at = 0.0
        """When the current (or last) command started (monotonic)."""
        self._measured_at = float("-inf")
        """When the last measurement that succeeded was started (monotonic)."""
        self._exceeding = threading.Lock()
        self.failures = Failures(on_unknown)
        """Measurements that failed in a row, and the last one's error (``on_unknown`` hears
        when the use turns unknown)."""
        self._thread = threading.Thread(target=self._loop, name="green-disk-watch", daemon=True)
        self._thread.start()

    def start(self) -> None:
        """A command starts: measure until :meth:`pause`. The first call takes the baseline
        (what was copied in before any command: the task's workspace), which is not counted."""
        if self.baseline is None:
            try:
                self.baseline = self._measure() or 0
            except Exception as exc:
                log.warning("disk.measure_failed", error=str(exc))
                self.baseline = 0
        self._command_at = time.monotonic()
        self._active.set()

    def pause(self) -> None:
        self._active.clear()

    def stop(self) -> None:
        self._stop.set()
        self._active.set()  # wake the thread so it can exit

    def unmeasured(self) -> bool:
        """After :meth:`pause`: the command ran long enough to be measured (``FIRST_WAIT``),
        but no measurement of it started in its last ``interval`` seconds (none at all, or the
        engine answered too slowly to keep up). Cheap: no engine call."""
        now = time.monotonic()
        if self.exceeded is not None or now - self._command_at < FIRST_WAIT:
            return False
        measured = self._measured_at >= self._command_at
        return not measured or now - self._measured_at > self._interval

    def measure_now(self) -> None:
        """One measurement now (blocking), with the rule of the watch: over the limit, the
        writer is stopped (``on_exceeded``). For a command that ended :meth:`unmeasured`."""
        size = self._take()
        if size is not None and size > self.limit:
            self._exceed(size, 0.0)

    def _take(self) -> int | None:
        """One measurement over the baseline; None when the engine could not say (logged)."""
        started = time.monotonic()
        engine_at = self._engine_ref() if self._engine_ref is not None else None
        try:
            size = self._measure()
        except Exception as exc:  # the engine hiccupped: measure again next time
            self.failures.failed(f"the container's size could not be measured: {exc}")
            return None
        if size is None:
            return None
        self.failures.worked()
        self._measured_at = max(self._measured_at, started)
        self._engine_at = engine_at
        self._size = size - (self.baseline or 0)
        return self._size

    def _loop(self) -> None:
        wait, last = FIRST_WAIT, None
        while not self._stop.is_set():
            if not self._active.is_set():  # between commands: now and then (nothing runs)
                if self._active.wait(self._interval * IDLE_FACTOR) or self.baseline is None:
                    wait, last = min(FIRST_WAIT, self._interval), None
                    continue
                wait = 0.0
            woke = self._wait(wait)
            if woke is None:
                continue
            frozen = woke and self._frozen is not None
            with self._frozen() if frozen and self._frozen else nullcontext() as kill:
                size = self._take()
                if size is None:
                    continue
                now = time.monotonic()
                rate = _rate(last, now, size)
                last = (now, size)
                over = size + rate * STOP_LAG > self.limit and self._over(size, rate)
                if over and kill is not None:  # recorded first: the sandbox reads it as they die
                    kill()
            if over and not frozen and self._frozen is not None:
                with self._frozen() as kill:  # from the host, at once: the engine's kill is slow
                    if kill is not None:
                        kill()
            if over:
                self._stop_writer(size)
            elif rate > 0:  # sooner as the cap nears: a quarter of the time the rate needs
                wait = min(self._interval, max(MIN_WAIT, (self.limit - size) / rate / 4))
            else:
                wait = min(FIRST_WAIT, self._interval) if rate < 0 else self._interval

    def _wait(self, wait: float) -> bool | None:
        """Wait ``wait`` s for the next measurement, or less (the tripwire): while a command
        runs, until the engine's file system grew since the last measurement started by more
        than the cap's room (were it all this container's, it would be past the cap: measure
        now, the container frozen). Another's writes only bring a measurement forward; its
        deletions hide growth. True: tripped; False: the time passed; None: the watch stops."""
        engine_at = self._engine_at
        if self._engine_used is None or engine_at is None or not self._active.is_set():
            return None if self._stop.wait(wait) else False
        room = self.limit - self._size
        end = time.monotonic() + wait
        while (left := end - time.monotonic()) > 0:
            if self._stop.wait(min(TRIP_EVERY, left)):
                return None
            used = self._engine_used()
            if used is not None and used - engine_at > room:
                return True
        return None if self._stop.is_set() else False

    def _exceed(self, size: int, rate: float) -> None:  # once: the thread, measure_now both may
        if self._over(size, rate):
            self._stop_writer(size)

    def _over(self, size: int, rate: float) -> bool:  # records it, once: whether this did
        with self._exceeding:
            if self.exceeded is not None:
                return False
            self.exceeded = size
            self.rate = rate
        log.warning("disk.limit_exceeded", size=size, rate=int(rate), limit=self.limit)
        return True

    def _stop_writer(self, size: int) -> None:
        try:
            self._on_exceeded(size)
        except Exception as exc:
            log.warning("disk.stop_failed", error=str(exc))


class Failures:
    """Consecutive failures of one kind of measurement (thread-safe enough: one writer);
    ``on_unknown`` is called with :attr:`unknown` when they reach :data:`UNKNOWN_AFTER`."""

    def __init__(self, on_unknown: Callable[[str], None] | None = None) -> None:
        self.count = 0
        self.error = ""
        self._on_unknown = on_unknown

    def failed(self, error: str) -> None:
        self.count += 1
        self.error = error
        log.warning("disk.measure_failed", error=error[-300:], in_a_row=self.count)
        if self._on_unknown is not None and self.count == UNKNOWN_AFTER and self.unknown:
            self._on_unknown(self.unknown)

    def worked(self) -> None:
        if self.count >= UNKNOWN_AFTER:
            log.info("disk.measured_again", after=self.count)
        self.count = 0

    @property
    def unknown(self) -> str | None:
        """Why the disk use is unknown, once :data:`UNKNOWN_AFTER` failed in a row."""
        if self.count < UNKNOWN_AFTER:
            return None
        return f"{self.count} measurements in a row failed; the last: {self.error}"


def _rate(last: tuple[float, int] | None, now: float, size: int) -> float:
    """Bytes per second since the last measurement; -1 when unknown (the first of a command)."""
    if last is None:
        return -1.0
    if now <= last[0]:
        return 0.0
    return max(0.0, (size - last[1]) / (now - last[0]))


class QuotaWatch(DiskWatch):
    """An enforced quota, watched only to end the task: while a command runs, ``probe()`` (a
    :func:`quota_full`) every ``interval`` seconds; the first that finds the quota full calls
    ``on_exceeded`` (the sandbox stops the container: the task ends as ``disk_limit``). The
    file system holds the cap whether or not a probe runs in time."""

    def __init__(
        self,
        probe: Callable[[], bool],
        limit: int,
        interval: float,
        on_exceeded: Callable[[int], None],
    ) -> None:
        self._probe = probe
        super().__init__(lambda: 0, limit, interval, on_exceeded)

    def unmeasured(self) -> bool:
        """Never: the sandbox probes the quota after every command itself (the file system
        held the cap meanwhile)."""
        return False

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self._active.is_set():
                self._active.wait()
                continue
            if self._stop.wait(self._interval) or not self._active.is_set():
                continue
            if self.exceeded is None and self._probe():
                self._exceed(self.limit, 0.0)
