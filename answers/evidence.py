"""What a checkpoint measured against the step without speculation: at which loads and contexts one of its
benchmarks beat the plain step (measured, or the model's where none was measured). The schedule does not
pick "no speculation" against it when the prediction's margin is within its band (answers/schedule.py)."""

from dataclasses import dataclass

from sqlalchemy.orm import Session

from specdash.answers.points import PointModel
from specdash.costmodel.context import CONTEXT_SLACK, context_bucket, decode_context
from specdash.db.contexts import ContextRow, stated_contexts


@dataclass(frozen=True)
class Win:
    concurrency: float
    context_tokens: float | None  # None: not stated
    steps: int
    speedup: float  # measured tok/s over the plain step's at the same load (and context)

    def matches(self, concurrency: float, context: float | None, reference: float | None = None) -> bool:
        """At this load, and at a context within CONTEXT_SLACK of `context` (or of the benchmarks'
        `reference` when none is asked); a benchmark that stated no context matches any."""
        if abs(self.concurrency - concurrency) > 1e-9:
            return False
        wanted = context if context is not None else reference
        if self.context_tokens is None or wanted is None:
            return True
        return wanted / CONTEXT_SLACK <= self.context_tokens <= wanted * CONTEXT_SLACK


def measured_wins(session: Session, model: PointModel) -> list[Win]:
    """The checkpoint's benchmarks on the deployment faster than the plain step at their load and context
    (by load and context bucket: one prediction each, however many windows a scrape stored)."""
    rows = stated_contexts(session, model.deployment_id, model.checkpoint_id, stated_only=False)
    groups: dict[tuple[int, int, int, float | None], list[ContextRow]] = {}
    for row in rows:
        if row.speculative and row.checkpoint_id == model.checkpoint_id:
            context = decode_context(row.input_tokens, row.output_tokens)
            bucket = None if context is None else context_bucket(context)
            groups.setdefault((row.num_steps, row.topk, row.concurrency, bucket), []).append(row)
    wins = []
    for (steps, topk, concurrency, bucket), group in groups.items():
        contexts = [
            c for c in (decode_context(r.input_tokens, r.output_tokens) for r in group) if c is not None
        ]
        context = sum(contexts) / len(contexts) if bucket is not None and contexts else None
        point = model.predict(steps, topk, float(concurrency), context)
        if point is None or not point.baseline_tps:
            continue
        tps = sum(r.decode_tps for r in group) / len(group)
        if tps > point.baseline_tps:
            wins.append(Win(float(concurrency), context, steps, tps / point.baseline_tps))
    return wins
