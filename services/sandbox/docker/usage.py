"""What a task container holds on its engine's disk, for a watched cap (:mod:`.disk`): the
writable layer as the engine measures it, files deleted but still open, and a cost per entry of
the layer.

Where green sees the container from its engine's host (:class:`~.hostside.HostSide`), the open
files are scanned there at every measurement. Elsewhere the scan is an exec in the container,
and it and the count of entries run in threads of their own that the watch never waits for (a
scan the agent slows cannot blind it); the last figure of each stands.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator

from docker import APIClient
from docker.models.containers import Container

from services.sandbox.base import SandboxSpec
from services.sandbox.docker.disk import (
    INODE_BYTES,
    Failures,
    LayerEntries,
    MeasurementFailed,
    hidden_bytes,
)
from services.sandbox.docker.hostside import CROWD_MOST, MOST_FDS, HostSide, TooManyOpen
from services.shared.logging import get_logger

log = get_logger("services.sandbox.docker")

INODES_EVERY = 2.0
"""Seconds between two counts of a watched container's layer entries while commands run (where
the engine's diff counts them, it walks the container's whole tree: about a third of a second of
the engine's CPU for an ARVO task, over a hundred times a ``SizeRw``; see :class:`LayerEntries`)."""


COUNT_AFTER = 1 / 8
"""Growth of the engine's disk since a count of entries began, as a share of the cap, after
which the next is due at once (:meth:`LayerUsage._grown_since_count`)."""


class LayerUsage:
    """Measures one container's use of the engine's disk (:meth:`measure`). ``on_unknown``
    hears when the scans of open files have failed too often in a row; ``removed`` says that
    green removed the container (a scan that fails then is no failure)."""

    def __init__(
        self,
        api: APIClient,
        container: Container,
        spec: SandboxSpec,
        on_unknown: Callable[[str], None] | None,
        removed: Callable[[], bool],
    ) -> None:
        self._api, self._container, self._spec, self._removed = api, container, spec, removed
        self._layer: LayerEntries | None = None  # how its layer's entries are counted
        self._entries = 0  # what the layer's entries cost (bytes), as last counted
        self._first_entries = 0  # how many the baseline's count found
        self._counted_through: float | None = None  # when the last count that worked started
        self._count_ended = float("-inf")  # when the last count ended (worked or not)
        self._used_at_count: int | None = None  # the engine's disk in use as the last began
        self._ran_until = float("-inf")  # when the last command ended; +inf while one runs
        self._hidden: tuple[float, int] = (float("-inf"), 0)  # when last scanned, bytes held
        self._scanning = threading.Lock()  # one scan of open files at a time, never waited for
        self._host: HostSide | None = None  # the container from its engine's host, if in view
        self._host_asked = False  # whether HostSide.of was asked (once, the container running)
        self._crowded = False  # its processes hold too many files to scan at a measurement
        self._fresh = False  # frozen: a measurement counts the entries itself
        self._counting = threading.Lock()
        self.scans = Failures(on_unknown)
        """The scans of open files that failed in a row."""

    def command_started(self) -> None:
        """Nothing of the agent's outlives a command (its processes are killed as it ends), so
        no file is held deleted-but-open as the next starts: its first scan is due one interval
        in, and a command shorter than that costs no scan (an exec in the container, the
        dearest part of a measurement)."""
        self._hidden = (time.monotonic(), 0)
        self._crowded = False
        self._ran_until = math.inf

    def command_ended(self) -> None:
        self._ran_until = time.monotonic()

    def measure(self) -> int | None:
        """What the task holds on the engine's disk (blocking): the writable layer as the
        engine measures it (``SizeRw``), plus what that misses: files deleted but still open
        (from the engine's host at every measurement, :class:`~.hostside.HostSide`; elsewhere
        a scan in the container, at most every ``disk_check_s`` and from one ``disk_check_s``
        into a command on: an exec costs the engine far more than ``SizeRw``), and
        :data:`~.disk.INODE_BYTES` per entry of the layer (counted every :data:`INODES_EVERY` s
        while commands run and once after: only a command adds entries, so an idle task costs
        no count). None: the container is gone."""
        rows = self._api.containers(all=True, size=True, filters={"id": self._container.id})
        if not rows:
            return None
        walked = self._layer is not None and self._layer.layer is not None
        if self._counted_through is None or (self._fresh and walked):  # waited for
            self._count_inodes()
        elif (
            self._ran_until > self._counted_through  # a command ran since the last count
            and (time.monotonic() - self._count_ended >= INODES_EVERY or self._grown_since_count())
            and not self._counting.locked()
        ):
            threading.Thread(target=self._count_inodes, daemon=True).start()  # never waited
        hidden = 0
        if rows[0].get("State") == "running":
            if not self._host_asked:  # asked once, the container running (its first pid)
                inspected = self._api.inspect_container(self._container.id)
                self._host = HostSide.of(self._api.base_url, inspected)
                self._host_asked = True
            now = time.monotonic()
            if self._host is not None:
                self._scan_host(now)
            elif now - self._hidden[0] >= self._spec.disk_check_s and not self._scanning.locked():
                self._hidden = (now, self._hidden[1])  # the next one an interval from now
                scan = lambda: hidden_bytes(self._api, self._container.id)  # noqa: E731
                threading.Thread(target=self._scan_hidden, args=(now, scan), daemon=True).start()
            hidden = self._hidden[1]
        return int(rows[0].get("SizeRw") or 0) + hidden + self._entries

    def engine_disk_used(self) -> int | None:
        """Bytes in use on the engine's file system (one ``statvfs``: the watch's tripwire);
        None where green does not see it (known from the first measurement of the container
        running on)."""
        if self._host is None:
            return None
        try:
            return self._host.disk_used()
        except OSError:
            return None

    def engine_reference(self) -> int | None:
        """What the tripwire measures growth from: the engine's disk in use now, or as the last
        count of entries began if less (entries made since are not charged yet)."""
        used, then = self.engine_disk_used(), self._used_at_count
        return min(used, then) if used is not None and then is not None else used

    def _grown_since_count(self) -> bool:
        """Whether the engine's disk grew by more than an eighth of the cap since the last count
        of entries began (where green sees it): a flood of directories, which ``SizeRw``
        ignores, is counted again at once, not 2 s on."""
        used, then = self.engine_disk_used(), self._used_at_count
        return (
            used is not None
            and then is not None
            and used - then > COUNT_AFTER * (self._spec.disk_limit or 0)
        )

    @contextlib.contextmanager
    def frozen(self) -> Iterator[Callable[[], None] | None]:
        """The container frozen while the block runs, which gets a kill of its processes
        (:meth:`.hostside.HostSide.frozen`); no freeze (and None) where green does not see it
        from the engine's host. A measurement meanwhile counts the layer's entries afresh
        where green walks it (frozen, a flood's count cannot lag behind it)."""
        if self._host is None:
            yield None
            return
        with self._host.frozen() as kill:
            self._fresh = True
            try:
                yield kill
            finally:
                self._fresh = False

    def _scan_host(self, started: float) -> None:
        """Scan for deleted-but-open files from the engine's host, now (a few system calls per
        open file: every measurement). A scan that fails keeps the last figure and counts as a
        failed scan (the disk use is unknown after a few in a row). Processes that hold more
        than :data:`~.hostside.MOST_FDS` files are scanned in a thread of their own instead,
        as far as :data:`~.hostside.CROWD_MOST` (the watch's cadence stands; their figure is
        one such scan late)."""
        assert self._host is not None
        host = self._host
        try:
            if self._crowded:
                raise TooManyOpen("as the last scan found")
            held = host.held()
        except TooManyOpen:
            self._crowded = True
            if not self._scanning.locked():
                threading.Thread(target=self._scan_crowd, args=(started,), daemon=True).start()
            return
        except MeasurementFailed as exc:
            if not self._removed():
                self.scans.failed(str(exc))
            return
        self.scans.worked()
        self._hidden = (started, held)

    def _scan_crowd(self, started: float) -> None:
        """A scan from the host as far as :data:`~.hostside.CROWD_MOST` (in a thread of its
        own); once one reads few enough files, the scans at each measurement resume."""
        assert self._host is not None
        host = self._host
        self._scan_hidden(started, lambda: host.held(most=CROWD_MOST))
        self._crowded = host.read > MOST_FDS

    def _scan_hidden(self, started: float, scan: Callable[[], int]) -> None:
        """Scan for deleted-but-open files (``scan``: :func:`~.disk.hidden_bytes`, or a crowd of
        them from the host) in a thread of its own:
        its figure counts from the next measurement on, unless a command started since. A scan
        that fails is a failed measurement (retried; the disk use turns unknown after a few),
        never 0."""
        with self._scanning:
            try:
                held = scan()
            except MeasurementFailed as exc:
                if not self._removed():
                    self.scans.failed(str(exc))
                return
            self.scans.worked()
            if started >= self._hidden[0]:
                self._hidden = (started, held)

    def _count_inodes(self) -> None:
        """Count the entries of the writable layer (:class:`LayerEntries`; later counts run in
        a thread of their own, as the engine's diff is slow on a big tree, and the last count
        stands). The baseline's count is whole; a later one stops past the cap."""
        with self._counting:
            started = time.monotonic()
            self._used_at_count = self.engine_disk_used()
            try:
                if self._layer is None:
                    self._layer = LayerEntries.of(self._api, self._container.attrs)
                if self._counted_through is None:
                    self._first_entries = entries = self._layer.count()
                else:  # bounded by the cap, once a count of this layer has worked: a layer
                    # the engine could never count (an image's own deep paths, say) is not the
                    # agent's doing, and a count that fails on it stays a failure (logged)
                    cap = (self._spec.disk_limit or 0) // INODE_BYTES
                    worked = self._counted_through > -math.inf
                    entries = self._layer.count(most=self._first_entries + cap if worked else None)
                self._entries = entries * INODE_BYTES + self._layer.reserved
                self._counted_through = started
            except Exception as exc:
                if self._counted_through is None:  # counted again once a command ran
                    self._counted_through = float("-inf")
                log.warning("disk.count_failed", error=str(exc)[-300:])
            finally:
                self._count_ended = time.monotonic()
