"""parity_count and run_checkpoints: the Overview's summary rows, kept by the writes

The Overview counted a prediction source's gaps up to the parity plot's size and estimated the rest from an
even sample, and ranked every checkpoint of the runs it lists with window functions on every first view.
`parity_count` holds, per prediction source, how many gaps it has on benchmarks that are not superseded;
`run_checkpoints` holds, per run with a checkpoint, how many it has, its latest (highest step, else the
newest stored) and its newest stored. The writes keep both in their own transaction (db/parity_counts.py,
db/run_checkpoints.py).

The upgrade fills both from the stored gaps and checkpoints, with the statements the writes use to
recount them. No other data changes.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-05
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_benchmark = sa.table("benchmark", sa.column("id", sa.Integer), sa.column("superseded_by_id", sa.Integer))
_prediction = sa.table("prediction", sa.column("id", sa.Integer), sa.column("source", sa.String))
_gap = sa.table("gap", sa.column("benchmark_id", sa.Integer), sa.column("prediction_id", sa.Integer))
_checkpoint = sa.table(
    "checkpoint", sa.column("id", sa.Integer), sa.column("run_id", sa.Integer), sa.column("step", sa.Integer)
)


def _parity_counts() -> sa.Select:
    """Per source, its gaps on benchmarks that are not superseded."""
    return (
        sa.select(_prediction.c.source, sa.func.count())
        .select_from(_gap)
        .join(_benchmark, _gap.c.benchmark_id == _benchmark.c.id)
        .join(_prediction, _gap.c.prediction_id == _prediction.c.id)
        .where(_benchmark.c.superseded_by_id.is_(None))
        .group_by(_prediction.c.source)
    )


def _run_checkpoints() -> sa.Select:
    """Per run with a checkpoint: how many, the latest (highest step, else newest id), the newest."""
    run = _checkpoint.c.run_id
    ranked = sa.select(
        _checkpoint.c.run_id,
        sa.func.count().over(partition_by=run).label("checkpoints"),
        _checkpoint.c.id.label("latest_checkpoint_id"),
        sa.func.max(_checkpoint.c.id).over(partition_by=run).label("newest_checkpoint_id"),
        sa.func.row_number()
        .over(
            partition_by=run,
            order_by=(sa.func.coalesce(_checkpoint.c.step, -1).desc(), _checkpoint.c.id.desc()),
        )
        .label("rank"),
    ).subquery()
    return sa.select(
        ranked.c.run_id, ranked.c.checkpoints, ranked.c.latest_checkpoint_id, ranked.c.newest_checkpoint_id
    ).where(ranked.c.rank == 1)


def upgrade() -> None:
    parity_count = op.create_table(
        "parity_count",
        sa.Column("source", sa.String(length=100), nullable=False),
        sa.Column("benchmarks", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("source", name=op.f("pk_parity_count")),
    )
    run_checkpoints = op.create_table(
        "run_checkpoints",
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("checkpoints", sa.Integer(), nullable=False),
        sa.Column("latest_checkpoint_id", sa.Integer(), nullable=False),
        sa.Column("newest_checkpoint_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["latest_checkpoint_id"],
            ["checkpoint.id"],
            name=op.f("fk_run_checkpoints_latest_checkpoint_id_checkpoint"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["run.id"], name=op.f("fk_run_checkpoints_run_id_run"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_run_checkpoints")),
    )
    assert parity_count is not None and run_checkpoints is not None
    op.execute(parity_count.insert().from_select(["source", "benchmarks"], _parity_counts()))
    op.execute(
        run_checkpoints.insert().from_select(
            ["run_id", "checkpoints", "latest_checkpoint_id", "newest_checkpoint_id"], _run_checkpoints()
        )
    )


def downgrade() -> None:
    op.drop_table("run_checkpoints")
    op.drop_table("parity_count")
