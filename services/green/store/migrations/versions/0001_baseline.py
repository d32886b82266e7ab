"""Baseline: green's schema as ``create_all`` made it before migrations existed.

A database made by that older code has these tables but no ``alembic_version``: each table is
created only when absent, so upgrading such a database keeps its rows and adds what it lacks.
On PostgreSQL the enum types are created here, once, under the migration lock (``create_all``
of several replicas used to race on ``CREATE TYPE taskstatus``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

TASK_STATUS = ("queued", "preparing", "running", "evaluating", "completed", "failed", "cancelled")
FAILURE_KIND = ("infra", "agent")


def enum(name: str, values: tuple[str, ...]) -> sa.Enum:
    """A VARCHAR on SQLite; on PostgreSQL the native type, created once by :func:`upgrade`."""
    native = postgresql.ENUM(*values, name=name, create_type=False)
    return sa.Enum(*values, name=name).with_variant(native, "postgresql")


def create(name: str, *columns: sa.Column, indexes: tuple[str, ...] = ()) -> None:
    if sa.inspect(op.get_bind()).has_table(name):
        return  # made by create_all before migrations existed
    op.create_table(name, *columns)
    for column in indexes:
        op.create_index(f"ix_{name}_{column}", name, [column])


def tz() -> sa.DateTime:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        postgresql.ENUM(*TASK_STATUS, name="taskstatus").create(bind, checkfirst=True)
        postgresql.ENUM(*FAILURE_KIND, name="failurekind").create(bind, checkfirst=True)
    create_tasks()
    create_the_others()


def create_tasks() -> None:
    create(
        "task_contexts",
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("arvo_id", sa.String(), nullable=False),
        sa.Column("status", enum("taskstatus", TASK_STATUS), nullable=False),
        sa.Column("purple_url", sa.String(), nullable=False),
        sa.Column("container_name", sa.String(), nullable=True),
        sa.Column("workspace_dir", sa.String(), nullable=True),
        sa.Column("created_at", tz(), nullable=False),
        sa.Column("started_at", tz(), nullable=True),
        sa.Column("updated_at", tz(), nullable=False),
        sa.Column("finished_at", tz(), nullable=True),
        sa.Column("max_steps", sa.Integer(), nullable=False),
        sa.Column("task_timeout_s", sa.Float(), nullable=False),
        sa.Column("command_timeout_s", sa.Float(), nullable=False),
        sa.Column("steps", sa.Integer(), nullable=False),
        sa.Column("tokens_in", sa.Integer(), nullable=False),
        sa.Column("tokens_out", sa.Integer(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.Column("submissions", sa.Integer(), nullable=False),
        sa.Column("end_reason", sa.String(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.Column("failure_kind", enum("failurekind", FAILURE_KIND), nullable=True),
        sa.Column("assessment_id", sa.String(), nullable=True),
        sa.Column("owner", sa.String(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("submission", sa.JSON(), nullable=True),
        sa.Column("scores", sa.JSON(), nullable=True),
        sa.Column("ground_truth", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        indexes=("kind", "status", "arvo_id", "owner", "assessment_id"),
    )


def create_the_others() -> None:
    create(
        "assessments",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("purple_url", sa.String(), nullable=False),
        sa.Column("owner", sa.String(), nullable=False),
        sa.Column("status", enum("taskstatus", TASK_STATUS), nullable=False),
        sa.Column("created_at", tz(), nullable=False),
        sa.Column("finished_at", tz(), nullable=True),
        sa.Column("request", sa.JSON(), nullable=True),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        indexes=("owner",),
    )
    create(
        "task_verifications",
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("ref", sa.String(), nullable=False),
        sa.Column("image_digest", sa.String(), nullable=False),
        sa.Column("image", sa.String(), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("reason", sa.String(), nullable=True),
        sa.Column("steps", sa.JSON(), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("checked_at", tz(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "ref", "image_digest"),
    )
    create(
        "image_uses",
        sa.Column("image", sa.String(), nullable=False),
        sa.Column("last_used", tz(), nullable=False),
        sa.PrimaryKeyConstraint("image"),
    )
    create(
        "commands",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("task_id", sa.String(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("command", sa.String(), nullable=False),
        sa.Column("exit_code", sa.Integer(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("timed_out", sa.Boolean(), nullable=False),
        sa.Column("truncated", sa.Boolean(), nullable=False),
        sa.Column("output", sa.String(), nullable=False),
        sa.Column("created_at", tz(), nullable=False),
        sa.ForeignKeyConstraint(["task_id"], ["task_contexts.id"]),
        sa.PrimaryKeyConstraint("id"),
        indexes=("task_id",),
    )


def downgrade() -> None:
    for table in ("commands", "image_uses", "task_verifications", "assessments", "task_contexts"):
        op.drop_table(table)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TYPE IF EXISTS failurekind")
        op.execute("DROP TYPE IF EXISTS taskstatus")
