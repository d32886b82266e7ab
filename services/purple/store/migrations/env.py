"""Alembic environment of purple's database: run in code by services.shared.migrate (no alembic.ini)."""

from __future__ import annotations

from alembic import context

from services.purple.store.models import PurpleModel
from services.shared.migrate import run_environment

run_environment(context, PurpleModel.metadata)
