"""Baseline: purple's schema as ``create_all`` made it before migrations existed.

A database made by that older code has these tables but no ``alembic_version``: each table is
created only when absent, so upgrading such a database keeps its rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def tz() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "task_contexts" not in existing:
        op.create_table(
            "task_contexts",
            sa.Column("a2a_task_id", sa.String(), nullable=True),
            sa.Column("green_url", sa.String(), nullable=False),
            sa.Column("policy", sa.String(), nullable=False),
            sa.Column("status", sa.String(), nullable=False),
            sa.Column("created_at", tz(), nullable=False),
            sa.Column("updated_at", tz(), nullable=False),
            sa.Column("finished_at", tz(), nullable=True),
            sa.Column("step_count", sa.Integer(), nullable=False),
            sa.Column("command_count", sa.Integer(), nullable=False),
            sa.Column("tokens_in", sa.Integer(), nullable=False),
            sa.Column("tokens_out", sa.Integer(), nullable=False),
            sa.Column("cost", sa.Float(), nullable=False),
            sa.Column("reason", sa.String(), nullable=True),
            sa.Column("trajectory_path", sa.String(), nullable=True),
            sa.Column("id", sa.String(), nullable=False),
            sa.Column("messages", sa.JSON(), nullable=True),
            sa.Column("submission", sa.JSON(), nullable=True),
            sa.PrimaryKeyConstraint("id"),
        )
    if "commands" not in existing:
        op.create_table(
            "commands",
            sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
            sa.Column("task_id", sa.String(), nullable=False),
            sa.Column("seq", sa.Integer(), nullable=False),
            sa.Column("command", sa.String(), nullable=False),
            sa.Column("exit_code", sa.Integer(), nullable=False),
            sa.Column("duration_s", sa.Float(), nullable=False),
            sa.Column("timed_out", sa.Boolean(), nullable=False),
            sa.Column("created_at", tz(), nullable=False),
            sa.ForeignKeyConstraint(["task_id"], ["task_contexts.id"]),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index("ix_commands_task_id", "commands", ["task_id"])


def downgrade() -> None:
    op.drop_table("commands")
    op.drop_table("task_contexts")
