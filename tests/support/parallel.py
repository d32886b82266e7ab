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
- **Session fixtures that write shared files** (the fixture images and assets, the helper
  virtual environments) are made under a file lock, once per run: :func:`once_per_run`.

xdist's own ``--dist loadgroup`` (``xdist_group`` marks) is not used: with pytest 9 its group
never reaches the node ids, so marked tests are spread like any others.
Without ``-n`` (or with ``-n 0``) this changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

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


SLOW_FIRST = (
    "e2e",
    "tests/integration/test_database_outage.py",
    "second-dockerd",
    "tests/sandbox/test_sandbox_hostile.py",
    "tests/integration/test_green_failures.py",
    "tests/integration/test_datasets_verify.py",
    "tests/integration/test_replicas.py",
    "tests/ui/test_dashboard_browser.py",
    "tests/integration/test_hostile_purple_http.py",
    "tests/integration/test_green_restart.py",
    "tests/integration/test_green_bad_input.py",
    "tests/fixtures/test_fixture_tasks.py",
    "tests/sandbox/test_sandbox.py",
    "tests/integration/test_slow_clients.py",
    "tests/integration/test_readme_commands.py",
    "tests/integration/test_green_replicas.py",
    "tests/integration/test_image_budget.py",
)
"""Units handed out first, the longest first (each unit's total in a CI run's junit report, 110 s
down to 29 s): xdist orders units by their number of tests, which would leave these few-test,
long units for the end, and the last worker would finish alone."""


class ModuleScheduling(LoadScopeScheduling):
    """``loadscope`` by module, with the :data:`SHARED_WORKER` units, :data:`SLOW_FIRST` first."""

    _ordered = False

    def _assign_work_unit(self, node) -> None:
        if not self._ordered:
            self._ordered = True
            for unit in reversed(SLOW_FIRST):
                if unit in self.workqueue:
                    self.workqueue.move_to_end(unit, last=False)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        for prefix, unit in SHARED_WORKER.items():
            if module.startswith(prefix):
                return unit
        return module


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
