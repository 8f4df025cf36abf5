"""load_fit: each deployment's load model fit, kept with a key of the data it was fitted on

Deployments measured only with speculation get their no-speculation baselines estimated from a load model
fitted to their speculative benchmarks (db/loadmodels.py). That fit was made again by every refresh, for
every such deployment, however small the file that triggered it: a 3-benchmark file into a store of
100,000 benchmarks cost 35 times what it cost into an empty one. This table keeps each fit with a key of
its data (loads, settings, drafters, what the priors know) and the number of benchmarks it rests on;
a refresh reuses it until that data changes materially.

The table is created empty: the first refresh or `specdash calibrate` after the upgrade fits and fills
it, since it is derived data. No other data changes.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "load_fit",
        sa.Column("deployment_id", sa.Integer(), nullable=False),
        sa.Column("data_key", sa.String(length=64), nullable=False),
        sa.Column("benchmarks", sa.Integer(), nullable=False),
        sa.Column("estimate", sa.JSON(), nullable=False),
        sa.Column("fitted_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployment.id"],
            name=op.f("fk_load_fit_deployment_id_deployment"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("deployment_id", name=op.f("pk_load_fit")),
    )


def downgrade() -> None:
    op.drop_table("load_fit")
