"""The agent's own words about how it ended: ``task_contexts.agent_reason``.

Purple's final A2A status message (bounded, one line), shown marked as the agent's words; green's
``end_reason``, ``error`` and ``failure_kind`` stay its own judgement.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("task_contexts", sa.Column("agent_reason", sa.String(), nullable=True))


def downgrade() -> None:
    op.drop_column("task_contexts", "agent_reason")  # SQLite >= 3.35 drops columns in place
