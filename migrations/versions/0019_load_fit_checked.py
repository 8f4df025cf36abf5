"""load_fit: how far each stored load fit's data was checked, and the shape it had

Whether a deployment's stored load fit still holds was decided by reading every speculative benchmark of
the deployment on every refresh (272 ms for one scraped window in a 100,000-benchmark store). A fit now
keeps the shape of the data it was last checked against (its loads, settings, drafters with their
families) with how many benchmarks that data held and the largest benchmark id of the store then; on
SQLite, where writers take turns, the next check reads only the benchmarks stored since.

The three columns are added empty: each stored fit is checked in full once, at the next refresh. No other
data changes.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("load_fit", schema=None) as batch_op:
        batch_op.add_column(sa.Column("checked_through", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("checked_benchmarks", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("shape", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("load_fit", schema=None) as batch_op:
        batch_op.drop_column("shape")
        batch_op.drop_column("checked_benchmarks")
        batch_op.drop_column("checked_through")
