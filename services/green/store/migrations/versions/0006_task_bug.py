"""The bug a task is about: ``task_contexts.bug``, shared by the kinds that ask questions of one bug.

The ARVO kinds ask three questions of the same bugs (locate: ``arvo:10055``, reproduce:
``arvo-poc:10055-l2``, fix: ``arvo-fix:10055``): each is about the bug ``arvo:10055``, and what is
disclosed while a task of the bug is unfinished, and who may start another, is decided per bug.
Existing rows get the bug their kind names: an ARVO kind's id without its reproduce level,
otherwise the task's own reference.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ARVO_KINDS = ("arvo", "arvo-poc", "arvo-fix")
"""The kinds whose tasks are about ARVO bugs when this revision was written (their ids: an ARVO
id, for ``arvo-poc`` with an optional ``-l<level>``)."""


def _bug(kind: str, ref_id: str) -> str:
    return f"arvo:{ref_id.split('-')[0]}" if kind in ARVO_KINDS else f"{kind}:{ref_id}"


def upgrade() -> None:
    op.add_column("task_contexts", sa.Column("bug", sa.String(), nullable=False, server_default=""))
    tasks = sa.table("task_contexts", sa.column("kind"), sa.column("ref_id"), sa.column("bug"))
    conn = op.get_bind()
    for kind, ref_id in conn.execute(sa.select(tasks.c.kind, tasks.c.ref_id).distinct()).all():
        conn.execute(
            tasks.update()
            .where(tasks.c.kind == kind, tasks.c.ref_id == ref_id)
            .values(bug=_bug(kind, ref_id))
        )
    op.create_index("ix_task_contexts_bug", "task_contexts", ["bug"])


def downgrade() -> None:
    op.drop_index("ix_task_contexts_bug", table_name="task_contexts")
    op.execute("ALTER TABLE task_contexts DROP COLUMN bug")  # SQLite >= 3.35 drops it in place
