"""alert: an index on (status, is_alert, severity, code) for the open-alert counts

The Overview counts open alerts by severity on every visit. Without this index the count reads every
alert row (400,000 at the bench's scale 10); with it the count reads the index's open entries only, in
severity order, and finds the muted ones by their leading diagnosis (code) without the table. No data
changes.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("alert", schema=None) as batch_op:
        batch_op.create_index(
            "ix_alert_open_counts", ["status", "is_alert", "severity", "code"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("alert", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_open_counts")
