"""Alembic environment of green's database: run in code by services.shared.migrate (no alembic.ini)."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from services.green.store import models  # noqa: F401  (registers the tables: autogenerate compares)
from services.shared.migrate import run_environment

run_environment(context, SQLModel.metadata)
