"""change: who changed which stored value, when, from what to what; ingested_file.ingested_by

`ingest --update` and `--replace`, profile, threshold and calibration saves, and run archive/delete write
a row each; existing databases start with an empty history and files ingested before have no
ingested_by.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "change",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("who", sa.String(length=200), nullable=True),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("subject", sa.String(length=300), nullable=False),
        sa.Column("field", sa.String(length=100), nullable=True),
        sa.Column("old_value", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("new_value", sa.JSON(none_as_null=True), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change")),
    )
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_change_at"), ["at"], unique=False)
    with op.batch_alter_table("ingested_file", schema=None) as batch_op:
        batch_op.add_column(sa.Column("ingested_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ingested_file", schema=None) as batch_op:
        batch_op.drop_column("ingested_by")
    with op.batch_alter_table("change", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_change_at"))
    op.drop_table("change")
