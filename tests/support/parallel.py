"""The suite on several workers (pytest-xdist: ``make test`` runs ``-n 4 --dist loadgroup``).

Most of the suite's time is waiting (containers, HTTP, timeouts), not CPU, so a few workers
overlap that waiting on two cores. Three rules keep the tests' meaning under it:

- **A module stays on one worker** (its tests get ``xdist_group(<module>)``): module-scoped
  fixtures (images, engines, browsers, a compose stack) are made once, and the tests of a module
  that share fixed names (a replica called ``replica-a``) never meet one another.
- **``exclusive`` tests run alone**: while one runs, no other test of the session does (a
  readers-writer lock on a file of this run: every other test holds it shared). For what
  occupies the whole machine or reads host-wide figures: the compose stacks of tests/e2e.
  Exclusive tests share one group, so they queue on one worker, not on all.
- **Session fixtures that write shared files** (the fixture images and assets, the helper
  virtual environments) are made under a file lock, once per run: :func:`once_per_run`.

Without ``-n`` (``pytest -p no:xdist``, or ``-n 0``) none of this does anything.
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

T = TypeVar("T")
RUN = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # the same in every worker of one run
LOCKS = Path(tempfile.gettempdir())


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "exclusive: runs alone when the suite runs on several workers (tests/support/parallel.py)",
    )
    config.addinivalue_line(  # xdist's own, declared here too: pytest -p no:xdist still runs
        "markers", "xdist_group(name): the tests of one group run on the same worker"
    )


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.iter_markers("xdist_group")):
            continue
        if item.get_closest_marker("exclusive"):
            item.add_marker(pytest.mark.xdist_group("exclusive"))
        else:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    with path.open("a+") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """Setup, call and teardown of a test under the run's lock: exclusive, or shared. A writer
    first takes the gate and keeps it while it waits, so readers queue behind it (no starving)."""
    if RUN is None:
        yield
        return
    gate, main = LOCKS / f"arena-xdist-{RUN}.gate", LOCKS / f"arena-xdist-{RUN}.lock"
    if item.get_closest_marker("exclusive"):
        with _flock(gate, fcntl.LOCK_EX), _flock(main, fcntl.LOCK_EX):
            yield
        return
    with _flock(gate, fcntl.LOCK_EX):
        pass
    with _flock(main, fcntl.LOCK_SH):
        yield


def once_per_run(name: str, make: Callable[[], T], ready: Callable[[], T | None]) -> T:
    """``make()`` under a file lock named ``name``; with several workers, only the first worker
    of the run calls it and the others take ``ready()`` (what it left behind) once it is done.
    One process (no xdist): ``make()``."""
    with _flock(LOCKS / f"arena-{name}.lock", fcntl.LOCK_EX):
        marker = LOCKS / f"arena-{name}.run"
        if RUN is not None and marker.exists() and marker.read_text() == RUN:
            found = ready()
            if found is not None:
                return found
        made = make()
        marker.write_text(RUN or "")
        return made
