"""repair databases made by pre-release builds of revision 0001

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01

Before revision 0001 was frozen, early builds of specdash created databases stamped 0001 that lack columns
the final 0001 has. Such a database passed the schema check and then failed on the first query. This
revision adds whichever of those columns is missing; on a database made by the final 0001 it does nothing.
(It runs after 0002, which touches none of these columns.)
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _late_columns() -> dict[str, list[sa.Column]]:
    """Columns of the final 0001 that pre-release builds of it did not create (new objects per call)."""
    return {
        "benchmark": [
            sa.Column("p99_tpot_ms", sa.Float(), nullable=True),
            sa.Column("p99_ttft_ms", sa.Float(), nullable=True),
            sa.Column("p99_itl_ms", sa.Float(), nullable=True),
            sa.Column("request_rate", sa.Float(), nullable=True),
            sa.Column("decode_tps_p10", sa.Float(), nullable=True),
            sa.Column("decode_tps_p90", sa.Float(), nullable=True),
            sa.Column("interval_count", sa.Integer(), nullable=True),
            sa.Column("position_survival", sa.JSON(none_as_null=True), nullable=True),
            sa.Column("engine_version", sa.String(length=40), nullable=True),
        ],
        "parameter_set": [
            sa.Column("draft_branch_ms", sa.Float(), server_default="0", nullable=False),
        ],
    }


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table, columns in _late_columns().items():
        present = {column["name"] for column in inspector.get_columns(table)}
        for column in columns:
            if column.name not in present:
                op.add_column(table, column)


def downgrade() -> None:
    # The columns belong to revision 0001's final shape; going back to 0001 keeps them.
    pass
