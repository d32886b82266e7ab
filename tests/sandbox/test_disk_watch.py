"""The watched disk cap's clock (services/sandbox/docker/disk.py), without an engine.

``measure`` stands for the engine's ``SizeRw``: the tests decide what it answers and how slowly
(the watch's own thread may be made to wait, as a busy engine does). The real engine's side is
tests/sandbox/test_sandbox_faults.py.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from services.sandbox.docker.disk import FIRST_WAIT, DiskWatch
from services.sandbox.docker.hostside import disk_devices

LIMIT = 100


class Engine:
    """What the watch measures: ``size`` bytes; the watch's own thread waits while ``slow``."""

    def __init__(self) -> None:
        self.size = 0
        self.slow = threading.Event()  # set: the engine answers the watch's thread, at last
        self.slow.set()
        self.stopped: list[int] = []
        self.calls = 0
        self.waiting = threading.Event()  # set: the watch's thread is in a measurement, waiting

    def measure(self) -> int:
        self.calls += 1
        if threading.current_thread().name == "green-disk-watch":
            if not self.slow.is_set():
                self.waiting.set()
            self.slow.wait()
        return self.size

    def stop(self, size: int) -> None:
        self.stopped.append(size)


@pytest.fixture
def engine() -> Iterator[Engine]:
    engine = Engine()
    yield engine
    engine.slow.set()


def _lasts_until_measured(engine: Engine, started: float) -> None:
    """The command runs until the watch's first measurement of it hangs on the slow engine,
    and FIRST_WAIT at least (the watch counts a shorter one as never due a measurement)."""
    assert engine.waiting.wait(30)
    time.sleep(max(0.0, started + FIRST_WAIT - time.monotonic()))


def _watch(engine: Engine, interval: float = 1.0) -> DiskWatch:
    return DiskWatch(engine.measure, LIMIT, interval, engine.stop)


def test_a_burst_that_ends_before_the_slow_engine_answers_ends_this_command(
    engine: Engine,
) -> None:
    watch = _watch(engine)
    watch.start()  # the baseline: 0
    engine.slow.clear()  # the watch's first measurement of the command hangs on the engine
    watch.pause()
    watch.start()
    engine.size = 4 * LIMIT  # eight writers, done before any answer
    _lasts_until_measured(engine, time.monotonic())
    watch.pause()
    assert watch.exceeded is None  # the watch's thread is still waiting: it saw nothing
    assert watch.unmeasured()
    watch.measure_now()
    assert watch.exceeded == 4 * LIMIT and engine.stopped == [4 * LIMIT]
    engine.slow.set()  # the late answer of the watch's thread stops nothing twice
    watch.stop()
    watch._thread.join(30)  # its late answer is taken before it ends
    assert not watch._thread.is_alive() and engine.stopped == [4 * LIMIT]


def test_a_command_shorter_than_the_first_measurement_costs_no_measurement(
    engine: Engine,
) -> None:
    watch = _watch(engine)
    watch.start()
    watch.pause()
    calls = engine.calls
    watch.start()
    watch.pause()
    assert not watch.unmeasured() and engine.calls == calls
    watch.stop()


def test_a_command_measured_recently_is_not_measured_again(engine: Engine) -> None:
    watch = _watch(engine, interval=5.0)
    watch.start()
    watch.pause()
    watch.start()
    engine.size = LIMIT // 2
    time.sleep(FIRST_WAIT)  # long enough to be measured
    deadline = time.monotonic() + 30
    while watch.unmeasured() and time.monotonic() < deadline:  # the thread's first measurement
        time.sleep(0.01)
    watch.pause()
    assert not watch.unmeasured()  # measured within its last interval: nothing more to measure
    watch.stop()


def test_under_the_limit_the_last_measurement_stops_nothing(engine: Engine) -> None:
    watch = _watch(engine)
    watch.start()
    engine.slow.clear()
    watch.pause()
    watch.start()
    engine.size = LIMIT  # at the cap, not past it
    _lasts_until_measured(engine, time.monotonic())
    watch.pause()
    assert watch.unmeasured()
    watch.measure_now()
    assert watch.exceeded is None and engine.stopped == []
    assert not watch.unmeasured()  # it was measured, just now
    watch.stop()


class Disk:
    """The engine's file system as the tripwire sees it: ``used`` bytes, as the test says."""

    def __init__(self) -> None:
        self.used = 10**9

    def __call__(self) -> int:
        return self.used


def _measured_twice(engine: Engine, watch: DiskWatch) -> None:
    """The command's first two measurements are taken: the next is an interval away."""
    deadline = time.monotonic() + 30
    calls = engine.calls
    while engine.calls < calls + 2:
        assert time.monotonic() < deadline, "the watch did not measure"
        time.sleep(0.01)


def test_the_engines_disk_growing_past_the_room_left_is_measured_at_once(
    engine: Engine,
) -> None:
    """The tripwire: between two measurements an hour apart, the engine's file system grows by
    more than the cap's room; the watch measures at once, and stops the writer."""
    disk = Disk()
    watch = DiskWatch(engine.measure, LIMIT, 3600.0, engine.stop, engine_used=disk)
    watch.start()
    _measured_twice(engine, watch)
    engine.size = 2 * LIMIT
    disk.used += 2 * LIMIT
    deadline = time.monotonic() + 60
    while not engine.stopped:
        assert time.monotonic() < deadline, "the tripwire did not measure"
        time.sleep(0.01)
    assert engine.stopped == [2 * LIMIT]
    watch.stop()


def test_another_containers_growth_only_brings_a_measurement_forward(engine: Engine) -> None:
    disk = Disk()
    watch = DiskWatch(engine.measure, LIMIT, 3600.0, engine.stop, engine_used=disk)
    watch.start()
    _measured_twice(engine, watch)
    calls = engine.calls
    disk.used += LIMIT // 2  # within the room: no measurement
    time.sleep(0.3)
    assert engine.calls == calls
    disk.used += LIMIT  # past it, but another's: measured, nothing stopped
    deadline = time.monotonic() + 60
    while engine.calls == calls:
        assert time.monotonic() < deadline, "the tripwire did not measure"
        time.sleep(0.01)
    assert engine.stopped == [] and watch.exceeded is None
    watch.stop()


MOUNTINFO = """\
129 104 0:44 / / rw,relatime master:5 - overlay overlay rw,lowerdir=/l,upperdir=/u,workdir=/w
130 129 0:46 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
145 131 0:57 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k
146 129 254:0 /var/lib/docker/containers/x/hosts /etc/hosts rw,relatime - ext4 /dev/vda rw
"""


def test_only_files_on_a_disk_count_as_held() -> None:
    """Deleted-but-open files count on the container's disk mounts (its overlay, a bind of the
    engine's), not in memory (``/dev/shm``, ``/proc``; a memfd's device is in no mount)."""
    assert disk_devices(MOUNTINFO) == {os.makedev(0, 44), os.makedev(254, 0)}


class Freezer:
    """What the watch's freeze does, in order: ``freeze``, ``measure``, ``kill``, ``thaw``."""

    def __init__(self, engine: Engine) -> None:
        self.events: list[str] = []
        self.frozen = False
        engine_measure = engine.measure

        def measure() -> int:
            if threading.current_thread().name == "green-disk-watch":
                self.events.append("measure frozen" if self.frozen else "measure")
            return engine_measure()

        engine.measure = measure  # type: ignore[method-assign]

    @contextlib.contextmanager
    def __call__(self) -> Iterator[Callable[[], None]]:
        self.frozen = True
        self.events.append("freeze")
        try:
            yield lambda: self.events.append("kill")
        finally:
            self.frozen = False
            self.events.append("thaw")


def test_a_tripped_measurement_is_taken_frozen_and_its_writer_killed_before_the_thaw(
    engine: Engine,
) -> None:
    """The tripwire's measurement runs with the container frozen; past the cap its processes
    are killed while frozen (they die as they thaw, writing nothing more), the engine's stop
    after the thaw; under it, the container only thaws."""
    disk, freezer = Disk(), Freezer(engine)
    stops: list[str] = []
    watch = DiskWatch(
        engine.measure, LIMIT, 3600.0, lambda size: stops.append(str(freezer.frozen)),
        engine_used=disk, frozen=freezer,
    )  # fmt: skip
    watch.start()
    _measured_twice(engine, watch)
    disk.used += 2 * LIMIT  # another's: measured frozen, thawed
    deadline = time.monotonic() + 60
    while "thaw" not in freezer.events:
        assert time.monotonic() < deadline, "the tripwire did not measure"
        time.sleep(0.01)
    assert freezer.events[-3:] == ["freeze", "measure frozen", "thaw"] and stops == []
    engine.size = 2 * LIMIT
    disk.used += 2 * LIMIT  # this one's
    while not stops:
        assert time.monotonic() < deadline, "the tripwire did not stop the writer"
        time.sleep(0.01)
    assert freezer.events[-4:] == ["freeze", "measure frozen", "kill", "thaw"]
    assert stops == ["False"]  # the engine's stop, after the thaw
    watch.stop()
