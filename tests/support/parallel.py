"""The suite on several workers (pytest-xdist: ``make test`` runs ``-n 4 --dist loadscope``;
``make test TEST_WORKERS=0`` runs it in one process).

In one process most of the suite's time is waiting (containers, HTTP, timeouts), not CPU: four
workers overlap that waiting until the two cores are busy. Two rules keep the tests' meaning
under it:

- **A module stays on one worker** (:class:`ModuleScheduling`, what ``--dist loadscope`` uses
  here): its module-scoped fixtures (images, engines, browsers, a compose stack) are made once,
  and the tests of a module that share fixed names (a replica called ``replica-a``) never run
  at the same time. Some modules also share a worker with others (:data:`SHARED_WORKER`): the
  compose stacks of tests/e2e build the same images; the engine-pool and disk-cap tests each
  start a second Docker engine (one at a time is enough for the machine).
- **The longest units go first** (:func:`longest_first`, from each unit's seconds in a CI run:
  :data:`UNIT_SECONDS`), so that the workers end together rather than one running the last long
  module alone.
- **Session fixtures that write shared files** (the fixture images and assets, the helper
  virtual environments) are made under a file lock, once per run: :func:`once_per_run`.

xdist's own ``--dist loadgroup`` (``xdist_group`` marks) is not used: with pytest 9 its group
never reaches the node ids, so marked tests are spread like any others.
Without ``-n`` (or with ``-n 0``) this changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar
from xml.etree import ElementTree

import pytest
from xdist.scheduler import LoadScopeScheduling

T = TypeVar("T")
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one run
LOCKS = Path(tempfile.gettempdir())

SHARED_WORKER = {
    "tests/e2e/": "e2e",
    "tests/sandbox/test_disk_quota.py": "second-dockerd",
    "tests/sandbox/test_engine_pool.py": "second-dockerd",
    "tests/integration/test_engine_pool_green.py": "second-dockerd",
}
"""Module path (or folder) prefix -> a worker's unit they share."""


UNIT_SECONDS = Path(__file__).with_name("unit_seconds.json")
"""Each unit's seconds in one CI run (its tests' total in the junit report), which
:class:`ModuleScheduling` hands out longest first. Refresh it from a run's report:
``uv run python -m tests.support.parallel report.xml`` (``PYTEST_ADDOPTS=--junitxml=report.xml``)."""


def unit_of(nodeid: str) -> str:
    """The unit a test runs in: its module, or the :data:`SHARED_WORKER` unit of its module."""
    module = nodeid.split("::", 1)[0]
    for prefix, unit in SHARED_WORKER.items():
        if module.startswith(prefix):
            return unit
    return module


def longest_first(units: list[str], seconds: dict[str, float]) -> list[str]:
    """``units`` in the order to hand them out: those with no recorded time first (a new module,
    in the order given), then the others by their recorded seconds, the longest first.

    A worker is sent its next unit while it still runs the last test of the current one (xdist
    keeps two tests ahead), so a unit handed out late waits behind another on one worker while
    the others end: the long units must go early and the end of the queue be short ones. xdist
    itself orders units by their number of tests, which leaves the few-test, long integration
    modules for the end."""
    new = [u for u in units if u not in seconds]
    timed = sorted((u for u in units if u in seconds), key=lambda u: -seconds[u])
    return new + timed


def read_unit_seconds(path: Path = UNIT_SECONDS) -> dict[str, float]:
    return json.loads(path.read_text()) if path.exists() else {}


def unit_seconds_from_junit(report: Path) -> dict[str, float]:
    """Each unit's total seconds in a junit report (pytest's ``--junitxml``): a test's
    ``classname`` is its module's dotted path, then its class if it has one."""
    totals: dict[str, float] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        if parts and parts[-1][:1].isupper():
            parts.pop()
        unit = unit_of("/".join(parts) + ".py")
        totals[unit] = totals.get(unit, 0.0) + float(case.get("time", 0))
    return {u: round(t, 1) for u, t in sorted(totals.items(), key=lambda kv: -kv[1])}


class ModuleScheduling(LoadScopeScheduling):
    """``loadscope`` by module, with the :data:`SHARED_WORKER` units, the longest first
    (:func:`longest_first`, from :data:`UNIT_SECONDS`)."""

    _ordered = False

    def _assign_work_unit(self, node) -> None:
        if not self._ordered:
            self._ordered = True
            order = longest_first(list(self.workqueue), read_unit_seconds())
            for unit in order:
                self.workqueue.move_to_end(unit)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log) -> LoadScopeScheduling | None:
    if config.getvalue("dist") == "loadscope":
        return ModuleScheduling(config, log)
    return None


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    with path.open("a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def once_per_run(name: str, make: Callable[[], T], ready: Callable[[], T | None]) -> T:
    """``make()`` under a file lock named ``name``; with several workers, only the first worker
    of the run calls it and the others take ``ready()`` (what it left behind) once it is done
    (``ready()`` None: they call ``make()`` in turn, e.g. to check a cache themselves).
    One process (no xdist): ``make()``."""
    with _flock(LOCKS / f"arena-{name}.lock"):
        marker = LOCKS / f"arena-{name}.run"
        if RUN is not None and marker.exists() and marker.read_text() == RUN:
            found = ready()
            if found is not None:
                return found
        made = make()
        marker.write_text(RUN or "")
        return made


def main(argv: list[str]) -> None:
    """``python -m tests.support.parallel REPORT.xml [OUT.json]``: write each unit's seconds in
    a run's junit report to ``OUT.json`` (by default :data:`UNIT_SECONDS`)."""
    if not 1 <= len(argv) <= 2 or not Path(argv[0]).is_file():
        sys.exit("usage: python -m tests.support.parallel REPORT.xml [OUT.json] (a junit report)")
    out = Path(argv[1]) if len(argv) > 1 else UNIT_SECONDS
    out.write_text(json.dumps(unit_seconds_from_junit(Path(argv[0])), indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
