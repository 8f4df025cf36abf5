"""prediction.baseline_estimated: whether the no-speculation baseline a prediction rests on was estimated
from the deployment's speculative benchmarks (no run without speculation) rather than measured or stated

Predictions stored before it read as not estimated: they were made only where a baseline was measured or
a profile stated one.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("prediction", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("baseline_estimated", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("prediction", schema=None) as batch_op:
        batch_op.drop_column("baseline_estimated")
