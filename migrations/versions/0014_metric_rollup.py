"""metric_rollup: training metrics summed per bucket of 64 and 4,096 steps, for long curves

The Checkpoints page draws each run's curves in at most 400 buckets of steps. Reading them from the points
costs about 0.25 microseconds a point: a run with 10 million points logged, eight of its keys charted, took
1.1 s. The rollup holds, per (run, key, width, bucket), the count, the sums of steps and values, the minimum
and the maximum: a chart reads a few thousand of these rows instead.

A rollup is kept for a (run, key, width) only when that key's points average at least 16 a bucket (with
points at every 50th step, a 64-step rollup would be a row per point): this revision fills in the rollups
of the points already stored by that rule, which `specdash ingest` applies from then on
(`specdash/db/rollups.py`). Points with a negative step keep no rollup. No other data changes.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# As they were when this revision was written; db/rollups.py holds the ones in use.
WIDTHS = (64, 4096)
MIN_POINTS = 16


def upgrade() -> None:
    op.create_table(
        "metric_rollup",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("key_id", sa.Integer(), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("bucket", sa.Integer(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("sum_step", sa.BigInteger(), nullable=False),
        sa.Column("sum_value", sa.Float(), nullable=False),
        sa.Column("min_value", sa.Float(), nullable=False),
        sa.Column("max_value", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(
            ["key_id"], ["metric_key.id"], name=op.f("fk_metric_rollup_key_id_metric_key")
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_metric_rollup_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "key_id", "width", "bucket", name=op.f("pk_metric_rollup")),
        sqlite_with_rowid=False,
    )
    connection = op.get_bind()
    pairs = connection.execute(
        sa.text(
            "SELECT run_id, key_id, count(*), min(step), max(step) FROM metric_point GROUP BY run_id, key_id"
        )
    ).all()
    for run_id, key_id, count, first, last in pairs:
        for width in WIDTHS:
            if first < 0 or count < MIN_POINTS * (last // width - first // width + 1):
                continue
            connection.execute(
                sa.text(
                    "INSERT INTO metric_rollup (run_id, key_id, width, bucket, n, sum_step, sum_value, "
                    f"min_value, max_value) SELECT run_id, key_id, {width}, step / {width}, count(*), "
                    "sum(step), sum(value), min(value), max(value) FROM metric_point "
                    f"WHERE run_id = :run AND key_id = :key GROUP BY run_id, key_id, step / {width}"
                ),
                {"run": run_id, "key": key_id},
            )


def downgrade() -> None:
    op.drop_table("metric_rollup")
