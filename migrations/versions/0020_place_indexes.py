"""leaderboard_entry and benchmark: indexes for a refresh of one place

One scraped window's refresh in a 100,000-benchmark store spent 14 ms deleting its checkpoint's
Leaderboard entries at one deployment and load: with those two columns in the statement, SQLite chose the
primary key by source alone and walked every entry of the source. The checkpoint index now holds the
deployment and load too. It also spent 14 ms (32 ms where every benchmark states its tokens) reading the
deployment's stated contexts from the table; a partial index of the benchmarks that state them answers it
alone. No data changes.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

STATED = sa.text("input_tokens IS NOT NULL")


def upgrade() -> None:
    op.drop_index("ix_leaderboard_entry_checkpoint", table_name="leaderboard_entry")
    op.create_index(
        "ix_leaderboard_entry_checkpoint",
        "leaderboard_entry",
        ["checkpoint_id", "source", "deployment_id", "concurrency"],
    )
    op.create_index(
        "ix_benchmark_contexts",
        "benchmark",
        ["deployment_id", "input_tokens", "output_tokens", "superseded_by_id"],
        sqlite_where=STATED,
        postgresql_where=STATED,
    )


def downgrade() -> None:
    op.drop_index("ix_benchmark_contexts", table_name="benchmark")
    op.drop_index("ix_leaderboard_entry_checkpoint", table_name="leaderboard_entry")
    op.create_index("ix_leaderboard_entry_checkpoint", "leaderboard_entry", ["checkpoint_id", "source"])
