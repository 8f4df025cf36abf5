"""A deployment's context model (costmodel/context.py) from what its benchmarks stated: the reference
context they ran at, and the KV share fitted to those of one checkpoint (and the runs without
speculation) once they span two contexts, each compared with its prediction at the reference."""

from collections.abc import Callable

from sqlalchemy.orm import Session

from specdash.costmodel.context import (
    ContextModel,
    ContextPoint,
    context_bucket,
    context_model,
    decode_context,
    kv_share_prior,
    sliding_window,
    spans_contexts,
)
from specdash.costmodel.priors import TargetArchitecture
from specdash.db.contexts import ContextRow, stated_contexts

# the round (ms) of a setting (steps, topk, batch) at the reference context, steps 0: the plain step
RoundAt = Callable[[int, int, float], float | None]


def context_model_for(
    session: Session,
    deployment_id: int,
    checkpoint_id: int,
    architecture: TargetArchitecture | None,
    comm_fraction: float,
    round_at: RoundAt,
    step_ms: Callable[[], float | None],
) -> ContextModel:
    """The context model of a checkpoint's points on a deployment."""
    rows = stated_contexts(session, deployment_id)
    contexts = [c for c in (decode_context(r.input_tokens, r.output_tokens) for r in rows) if c is not None]
    prior = kv_share_prior(architecture, comm_fraction)
    window = sliding_window(architecture)
    if not spans_contexts(contexts):
        return context_model(contexts, prior, window=window)
    step = step_ms()
    if step is None:
        return context_model(contexts, prior, window=window)
    mine = [r for r in rows if r.checkpoint_id in (checkpoint_id, None)]
    points = [p for p in (_point(cell, step, round_at) for cell in cells(mine).values()) if p is not None]
    return context_model(contexts, prior, points, window)


CellKey = tuple[int | None, bool, int, int, int, float]


def cells(rows: list[ContextRow]) -> dict[CellKey, list[ContextRow]]:
    """The rows by checkpoint, setting, load and context bucket."""
    out: dict[CellKey, list[ContextRow]] = {}
    for row in rows:
        context = decode_context(row.input_tokens, row.output_tokens)
        if context is None or (row.speculative and not row.accept_length):
            continue
        key = (
            row.checkpoint_id,
            row.speculative,
            row.num_steps,
            row.topk,
            row.concurrency,
            context_bucket(context),
        )
        out.setdefault(key, []).append(row)
    return out


def measured_ms(row: ContextRow) -> float:
    """The row's measured round (or step without speculation) in ms: 1000 tau / tok/s."""
    return 1000.0 * ((row.accept_length or 1.0) if row.speculative else 1.0) / row.decode_tps


def _point(cell: list[ContextRow], step_ms: float, round_at: RoundAt) -> ContextPoint | None:
    first = cell[0]
    steps = first.num_steps if first.speculative else 0
    predicted = round_at(steps, first.topk, float(first.concurrency))
    if predicted is None:
        return None
    contexts = [decode_context(r.input_tokens, r.output_tokens) or 0.0 for r in cell]
    return ContextPoint(
        float(first.concurrency),
        sum(contexts) / len(contexts),
        step_ms,
        sum(measured_ms(r) for r in cell) / len(cell),
        predicted,
        (float(first.concurrency), steps, first.topk),
    )
