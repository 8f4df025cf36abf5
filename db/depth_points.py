"""What one checkpoint measured on one deployment at each draft depth and load: the points the What-if and
Checkpoints pages draw on the predicted depth curve."""

from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.db.models import Benchmark
from specdash.db.rows import rows_of


class DepthPoint(NamedTuple):
    """What a checkpoint measured at one depth, top-k and load: the mean over its `n` benchmarks."""

    num_steps: int
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    n: int
    measured_tps: float
    accept_length: float | None


def measured_by_depth(
    session: Session, checkpoint_id: int, deployment_id: int, dataset: str | None = None
) -> list[DepthPoint]:
    """Speculative benchmarks of the checkpoint on the deployment (superseded ones left out), averaged per
    depth, top-k and load, on one dataset or over all; shallow and light loads first."""
    query = (
        select(
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            func.count().label("n"),
            func.avg(Benchmark.decode_tps).label("measured_tps"),
            func.avg(Benchmark.accept_length).label("accept_length"),
        )
        .where(
            Benchmark.checkpoint_id == checkpoint_id,
            Benchmark.deployment_id == deployment_id,
            Benchmark.speculative_algorithm.is_not(None),
            Benchmark.num_steps.is_not(None),
            Benchmark.superseded_by_id.is_(None),
        )
        .group_by(Benchmark.num_steps, Benchmark.topk, Benchmark.num_draft_tokens, Benchmark.concurrency)
        .order_by(Benchmark.concurrency, Benchmark.num_steps, Benchmark.topk)
    )
    if dataset is not None:
        query = query.where(Benchmark.dataset == dataset)
    return rows_of(session, query, DepthPoint)
