"""Green's engine (its tables live in SQLModel's default metadata)."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

from services.green.store import models  # noqa: F401  (registers the tables)
from services.shared.db import make_engine as _make_engine


def make_engine(url: str) -> Engine:
    return _make_engine(url, SQLModel.metadata)
