"""Kind-neutral task records: ``task_contexts.arvo_id`` becomes ``ref_id``.

The column always held the task's id within its kind (an ARVO id, a SWE-bench instance id); with
``kind`` it forms the task reference ``kind:ref_id``. Rows keep their values.
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def _rename(old: str, new: str) -> None:
    # RENAME COLUMN is plain SQL on PostgreSQL and on SQLite >= 3.25 (no table copy).
    op.drop_index(f"ix_task_contexts_{old}", table_name="task_contexts")
    op.execute(f"ALTER TABLE task_contexts RENAME COLUMN {old} TO {new}")
    op.create_index(f"ix_task_contexts_{new}", "task_contexts", [new])


def upgrade() -> None:
    _rename("arvo_id", "ref_id")


def downgrade() -> None:
    _rename("ref_id", "arvo_id")
