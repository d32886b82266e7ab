"""Replicas on one database: task leases, cancel requests, the instances table.

``task_contexts.lease_until``: the owner's hold on an unfinished task (renewed while it runs it);
``task_contexts.cancel_requested``: any replica may set it, the owner polls it;
``instances``: one row per live green replica (name, url, incarnation, started, heartbeat).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE ADD COLUMN on both (SQLite's batch copy would trip the commands' FK);
    # the default is a constant ('0' is false for both), which SQLite's ADD COLUMN requires.
    op.add_column("task_contexts", sa.Column("lease_until", sa.DateTime(timezone=True)))
    op.add_column(
        "task_contexts",
        sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default="0"),
    )
    op.create_table(
        "instances",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("incarnation", sa.String(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("instances")
    for column in ("cancel_requested", "lease_until"):  # SQLite >= 3.35 drops columns in place
        op.execute(f"ALTER TABLE task_contexts DROP COLUMN {column}")
