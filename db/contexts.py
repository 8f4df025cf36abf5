"""The benchmarks of a deployment that stated their prompt and output lengths, as the context model reads
them (answers/context.py): typed rows, no choice made here."""

from dataclasses import dataclass

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from specdash.costmodel.throughput import draft_width
from specdash.db.models import Benchmark


@dataclass(frozen=True)
class ContextRow:
    checkpoint_id: int | None  # None: a run without speculation
    speculative: bool
    num_steps: int
    topk: int
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    decode_tps: float
    accept_length: float | None
    input_tokens: float | None
    output_tokens: float | None


def stated_contexts(
    session: Session, deployment_id: int, checkpoint_id: int | None = None, stated_only: bool = True
) -> list[ContextRow]:
    """The deployment's current benchmarks that stated their lengths (`stated_only`, else all): all of
    them, or only those of `checkpoint_id` and the runs without speculation."""
    query = select(
        Benchmark.checkpoint_id,
        Benchmark.speculative_algorithm,
        Benchmark.num_steps,
        Benchmark.topk,
        Benchmark.num_draft_tokens,
        Benchmark.concurrency,
        Benchmark.dataset,
        Benchmark.decode_tps,
        Benchmark.accept_length,
        Benchmark.input_tokens,
        Benchmark.output_tokens,
    ).where(
        Benchmark.deployment_id == deployment_id,
        Benchmark.superseded_by_id.is_(None),
    )
    if stated_only:
        query = query.where(Benchmark.input_tokens.is_not(None))
    if checkpoint_id is not None:
        query = query.where(
            or_(Benchmark.checkpoint_id == checkpoint_id, Benchmark.speculative_algorithm.is_(None))
        )
    return [
        ContextRow(
            checkpoint_id=row.checkpoint_id,
            speculative=row.speculative_algorithm is not None and bool(row.num_steps),
            num_steps=row.num_steps or 0,
            topk=draft_width(row.topk),
            num_draft_tokens=row.num_draft_tokens,
            concurrency=row.concurrency,
            dataset=row.dataset,
            decode_tps=row.decode_tps,
            accept_length=row.accept_length,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
        )
        for row in session.execute(query.order_by(Benchmark.id))
    ]
