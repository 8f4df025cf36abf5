"""prediction: an index on the expression (source || '') for the list of prediction sources

The Overview, the Leaderboard and the Alerts page list the prediction sources stored (theory, calibrated,
external names). Without an index that list read every prediction (800,000 rows at the bench's scale 10);
with this one it takes one index step per source. The index is on an expression, not on the column, so
queries that filter on `source = ...` keep their plans (an index on the column led SQLite, without
statistics, to drive the parity plot's queries from it: ten times slower). No data changes.

SQLite's batch mode cannot reflect an expression index: a later revision that rebuilds the prediction
table in batch mode must create this index again.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_prediction_source_key", "prediction", [sa.text("(source || '')")], unique=False)


def downgrade() -> None:
    op.drop_index("ix_prediction_source_key", table_name="prediction")
