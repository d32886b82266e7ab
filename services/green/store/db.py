"""Green's engine: its schema is brought to head by the migrations shipped beside this module."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine

from services.green.store import models  # noqa: F401  (registers the tables)
from services.shared.db import DEADLINE_S
from services.shared.migrate import make_engine as _make_engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


def make_engine(url: str, deadline_s: float = DEADLINE_S) -> Engine:
    return _make_engine(url, MIGRATIONS, deadline_s)
