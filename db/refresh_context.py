"""What one refresh shares that the store reads apart from the deployments and their parameter sets
(answers/refresh_context.py assembles the specdash.rows.RefreshContext): each drafter's identity and
trained rates, and each deployment's reference context."""

from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel.context import decode_context, reference_context, spans_contexts
from specdash.db.acceptance import checkpoint_rates
from specdash.db.bulk import select_in
from specdash.db.models import Benchmark, Checkpoint, Run
from specdash.rows import Drafter


def reference_contexts(session: Session, deployment_ids: Sequence[int] | None) -> dict[int, float]:
    """Each deployment's median stated context (costmodel.context), where its benchmarks span two: a
    benchmark far from it is judged against a prediction made for another context."""
    query = (
        select(Benchmark.deployment_id, Benchmark.input_tokens, Benchmark.output_tokens)
        .where(Benchmark.input_tokens.is_not(None), Benchmark.superseded_by_id.is_(None))
        .distinct()
    )
    if deployment_ids is not None:
        query = query.where(Benchmark.deployment_id.in_(list(deployment_ids)))
    stated: dict[int, list[float]] = defaultdict(list)
    for deployment_id, input_tokens, output_tokens in session.execute(query):
        context = decode_context(input_tokens, output_tokens)
        if context is not None:
            stated[deployment_id].append(context)
    return {d: reference_context(c) for d, c in stated.items() if spans_contexts(c)}


def read_drafters(session: Session, checkpoint_ids: Sequence[int] | None) -> dict[int, Drafter]:
    rates = checkpoint_rates(session, checkpoint_ids)
    query = select(Checkpoint.id, Run.speculative_algorithm, Run.hidden_size, Run.ttt_length, Run.id).join(
        Checkpoint.run
    )
    return {
        checkpoint_id: Drafter(algorithm, hidden_size, ttt_length, run_id, rates.get(checkpoint_id, ()))
        for checkpoint_id, algorithm, hidden_size, ttt_length, run_id in select_in(
            session, query, Checkpoint.id, checkpoint_ids
        )
    }
