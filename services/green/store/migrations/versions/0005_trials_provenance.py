"""Results you can publish: each task's trial index and the provenance that decides its score.

``task_contexts.trial``: which of a task's repeated attempts (``trials`` of an assessment, ``arena
run --trials``) this task is, 1 for every existing row; ``task_contexts.provenance``: green's
version and commit, the scoring rule's version, the image digest, the assets' and the ground
truth's sha256, purple's card and what purple reports of itself, the limits.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "task_contexts", sa.Column("trial", sa.Integer(), nullable=False, server_default="1")
    )
    op.add_column("task_contexts", sa.Column("provenance", sa.JSON()))


def downgrade() -> None:
    for column in ("provenance", "trial"):  # SQLite >= 3.35 drops columns in place
        op.execute(f"ALTER TABLE task_contexts DROP COLUMN {column}")
