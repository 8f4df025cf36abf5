"""benchmark.concurrency_source: where a benchmark's concurrency came from (file, log, or derived)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

A request-rate run names no concurrency; specdash derives it (Little's law, or the prompt count of an
all-at-once run) instead of storing a silent 1, and says so in this column. Rows stored before it have
none: nothing is known about how their concurrency was told.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("benchmark") as batch_op:
        batch_op.add_column(sa.Column("concurrency_source", sa.String(length=40), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("benchmark") as batch_op:
        batch_op.drop_column("concurrency_source")
