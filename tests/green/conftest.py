"""Fixtures of green's write paths under a locked database (test_task_writes, test_endings,
test_offloop)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from services.green.store import offloop
from services.green.store.crud import TaskStore
from services.green.store.db import make_engine
from services.green.store.models import TaskStatus
from services.green.store.offloop import Database
from tests.store.test_queue import task

OWNER = "green-test"
"""The replica that holds ``running_task_store``'s task ``t001``."""


@pytest.fixture
def running_task_store(tmp_path: Path) -> TaskStore:
    """A SQLite store whose task ``t001`` runs, held by :data:`OWNER`. A statement waits up to
    5 s for a lock: far longer than ``impatient_db``'s caller does."""
    store = TaskStore(make_engine(f"sqlite:///{tmp_path}/g.db", deadline_s=5.0))
    store.add(task(1, TaskStatus.running, owner=OWNER))
    return store


@pytest.fixture
def impatient_db(monkeypatch) -> Iterator[Database]:
    """A :class:`Database` whose caller gives up on each call after 0.2 s."""
    monkeypatch.setattr(offloop, "MARGIN_S", 0.0)
    db = Database(deadline_s=0.2)
    yield db
    db.close()
