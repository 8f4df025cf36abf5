"""leaderboard_entry: the Leaderboard's entries, stored and kept by every refresh

The Leaderboard ranked checkpoints by computing, on every first view, each competing benchmark's speedup,
the means per dataset and setting and the best setting of every (checkpoint, deployment, load): at 400,000
benchmarks that statement took 5.5-6.6 s. This table holds its outcome per prediction source, dataset (or
across datasets) and ranking, written by the refresh that follows every change to benchmarks, predictions
or baselines (`specdash/db/board.py`); the page reads a page of it.

The table is created empty here: `specdash init` fills it from the stored benchmarks with the ranking code
of the specdash doing the upgrade (db/schema.py), since it is derived data. No other data changes.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "leaderboard_entry",
        sa.Column("source", sa.String(length=100), nullable=False),
        sa.Column("across", sa.Boolean(), nullable=False),
        sa.Column("dataset", sa.String(length=200), nullable=False),
        sa.Column("rank_by", sa.String(length=20), nullable=False),
        sa.Column("checkpoint_id", sa.Integer(), nullable=False),
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("speculative_algorithm", sa.String(length=40), nullable=True),
        sa.Column("num_steps", sa.Integer(), nullable=True),
        sa.Column("topk", sa.Integer(), nullable=True),
        sa.Column("num_draft_tokens", sa.Integer(), nullable=True),
        sa.Column("measured_speedup", sa.Float(), nullable=True),
        sa.Column("predicted_speedup", sa.Float(), nullable=True),
        sa.Column("measured_tps", sa.Float(), nullable=True),
        sa.Column("predicted_tps", sa.Float(), nullable=True),
        sa.Column("baseline_tps", sa.Float(), nullable=True),
        sa.Column("error_band", sa.Float(), nullable=True),
        sa.Column("datasets", sa.Integer(), nullable=False),
        sa.Column("benchmarks", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["checkpoint_id"],
            ["checkpoint.id"],
            name=op.f("fk_leaderboard_entry_checkpoint_id_checkpoint"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployment.id"],
            name=op.f("fk_leaderboard_entry_deployment_id_deployment"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "source",
            "across",
            "dataset",
            "rank_by",
            "checkpoint_id",
            "deployment_id",
            "concurrency",
            name=op.f("pk_leaderboard_entry"),
        ),
    )
    op.create_index(
        "ix_leaderboard_entry_view",
        "leaderboard_entry",
        ["source", "rank_by", "across", "dataset"],
    )
    op.create_index("ix_leaderboard_entry_checkpoint", "leaderboard_entry", ["checkpoint_id", "source"])


def downgrade() -> None:
    op.drop_index("ix_leaderboard_entry_checkpoint", table_name="leaderboard_entry")
    op.drop_index("ix_leaderboard_entry_view", table_name="leaderboard_entry")
    op.drop_table("leaderboard_entry")
