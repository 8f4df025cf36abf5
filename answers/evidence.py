"""What a checkpoint measured against the step without speculation: at which loads and contexts one of its
benchmarks beat the plain step (measured, or the model's where none was measured). The schedule does not
pick "no speculation" against it when the prediction's margin is within its band (answers/schedule.py)."""

from dataclasses import dataclass

from sqlalchemy.orm import Session

from specdash.answers.points import PointModel
from specdash.costmodel.context import CONTEXT_SLACK, decode_context
from specdash.db.contexts import stated_contexts


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
    """The checkpoint's benchmarks on the deployment faster than the plain step at their load and context."""
    rows = stated_contexts(session, model.deployment_id, model.checkpoint_id, stated_only=False)
    wins = []
    for row in rows:
        if not row.speculative or row.checkpoint_id != model.checkpoint_id:
            continue
        context = decode_context(row.input_tokens, row.output_tokens)
        point = model.predict(row.num_steps, row.topk, float(row.concurrency), context)
        if point is None or not point.baseline_tps:
            continue
        speedup = row.decode_tps / point.baseline_tps
        if speedup > 1.0:
            wins.append(Win(float(row.concurrency), context, row.num_steps, speedup))
    return wins
