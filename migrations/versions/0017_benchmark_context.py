"""benchmark context: the mean prompt and output length per request of each benchmark

At long context each decode forward reads every running request's KV cache, and that read, not the
weights, sets the step: speculation pays again at loads where it lost, and the best depth grows. The cost
model needs each benchmark's context to tell the two apart, so a benchmark now stores `input_tokens` and
`output_tokens`, the mean prompt and output length of its requests.

Stored benchmarks keep every value. Where their raw record states the lengths (SGLang `bench_serving` and
`vllm bench serve` results carry `total_input_tokens`, `total_output_tokens` and `completed`, SGLang
`bench_offline_throughput` the totals and `successful_requests`; SGLang `bench_one_batch` carries
`input_len` and `output_len`) the upgrade fills the new columns from it, so a
store kept for months gets its context without re-ingesting; elsewhere they stay NULL (not stated).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-04
"""

import json
import math
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 2000


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def lengths_from_raw(raw: Any) -> tuple[float | None, float | None]:
    """The mean input and output tokens per request a stored raw record states, else None."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None, None
    if not isinstance(raw, dict):
        return None, None
    # bench_serving and bench serve count the completed requests; bench_offline_throughput its successful ones
    completed = _number(raw.get("completed")) or _number(raw.get("successful_requests"))
    if completed:
        total_in, total_out = _number(raw.get("total_input_tokens")), _number(raw.get("total_output_tokens"))
        return (
            total_in / completed if total_in is not None else None,
            total_out / completed if total_out is not None else None,
        )
    return _number(raw.get("input_len")), _number(raw.get("output_len"))


def upgrade() -> None:
    with op.batch_alter_table("benchmark", schema=None) as batch_op:
        batch_op.add_column(sa.Column("input_tokens", sa.Float(), nullable=True))
        batch_op.add_column(sa.Column("output_tokens", sa.Float(), nullable=True))
    benchmark = sa.table(
        "benchmark",
        sa.column("id", sa.Integer),
        sa.column("raw", sa.Text),
        sa.column("input_tokens", sa.Float),
        sa.column("output_tokens", sa.Float),
    )
    bind = op.get_bind()
    rows = bind.execute(sa.select(benchmark.c.id, benchmark.c.raw).where(benchmark.c.raw.is_not(None)))
    updates = []
    for benchmark_id, raw in rows.all():
        stated_in, stated_out = lengths_from_raw(raw)
        if stated_in is not None or stated_out is not None:
            updates.append({"key": benchmark_id, "input_tokens": stated_in, "output_tokens": stated_out})
    statement = (
        sa.update(benchmark)
        .where(benchmark.c.id == sa.bindparam("key"))
        .values(input_tokens=sa.bindparam("input_tokens"), output_tokens=sa.bindparam("output_tokens"))
    )
    for start in range(0, len(updates), _BATCH):
        bind.execute(statement, updates[start : start + _BATCH])


def downgrade() -> None:
    with op.batch_alter_table("benchmark", schema=None) as batch_op:
        batch_op.drop_column("output_tokens")
        batch_op.drop_column("input_tokens")
