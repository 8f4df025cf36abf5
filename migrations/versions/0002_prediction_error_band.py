"""prediction.error_band: each prediction's expected relative error at 90 % coverage

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # nullable: external predictions carry none, and stored ones get theirs at the next refresh
    with op.batch_alter_table("prediction") as batch_op:
        batch_op.add_column(sa.Column("error_band", sa.Float(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("prediction") as batch_op:
        batch_op.drop_column("error_band")
