"""benchmark: an index on (speculative_algorithm, deployment_id, concurrency) for the baselines

A refresh reads the no-speculation baselines of the deployments it touches (speculative_algorithm IS
NULL); without this index that read walks every benchmark of those deployments, which at hundreds of
thousands of benchmarks costs more than the refresh of one new benchmark itself. No data changes.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("benchmark", schema=None) as batch_op:
        batch_op.create_index(
            "ix_benchmark_baselines", ["speculative_algorithm", "deployment_id", "concurrency"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("benchmark", schema=None) as batch_op:
        batch_op.drop_index("ix_benchmark_baselines")
