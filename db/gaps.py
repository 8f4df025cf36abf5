"""Gaps of a batch of benchmarks: each benchmark against each of its group's predictions, split into its
acceptance and round-time parts and diagnosed by the cost model, written in bulk where the numbers
changed; then every benchmark's verdict (db/verdicts.py) from its candidates."""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

from sqlalchemy import Text, func, select, type_coerce
from sqlalchemy.orm import Session

from specdash.costmodel import (
    Diagnosis,
    GapContext,
    GapDecomposition,
    RoundTime,
    Throughput,
    decompose,
    diagnose,
    throughput,
)
from specdash.costmodel.context import decode_context
from specdash.costmodel.diagnoses import worst_severity
from specdash.costmodel.domain import TauSource
from specdash.costmodel.sources import Trained, choose_accept_length
from specdash.db.bulk import chunks, insert_rows, select_in, update_rows
from specdash.db.history import Reference
from specdash.db.models import Gap
from specdash.db.predictions import (
    BenchmarkRow,
    Groups,
    Predicted,
    PredictionKey,
    PredictionValues,
    Stored,
)
from specdash.db.refresh_context import RefreshContext
from specdash.db.settings import applicable_threshold
from specdash.db.verdicts import Candidate, write_verdicts

GAP_VALUES = (
    "gap",
    "measured_tps",
    "predicted_tps",
    "measured_round_ms",
    "predicted_round_ms",
    "acceptance_factor",
    "round_factor",
    "unexplained_ms",
    "diagnoses",
    "severity",
)


class GapValues(NamedTuple):
    """A gap's stored numbers (columns of GAP_VALUES), diagnoses as the JSON text stored."""

    gap: float
    measured_tps: float
    predicted_tps: float
    measured_round_ms: float | None
    predicted_round_ms: float | None
    acceptance_factor: float | None
    round_factor: float | None
    unexplained_ms: float | None
    diagnoses: str
    severity: str | None


class _AsJudged(NamedTuple):
    """A prediction as a benchmark is judged against it (_as_judged)."""

    result: Throughput | None  # None: an external prediction, whose throughput depends on the benchmark
    measured_tau: bool  # whether the gap is split by the benchmark's measured tau
    tau_source: str | None
    tau_text: str


class _Judging(NamedTuple):
    """One prediction of a group as its benchmarks are judged against it: the prediction, what the
    diagnoses are given (the group's and the prediction's part; each benchmark sets its own fields), the
    alert threshold and the parameter set's version."""

    prediction: Predicted
    context: GapContext
    threshold: float
    version: int | None


@dataclass
class _Judged:
    """A batch's gaps before they are written, and each benchmark's candidates for its verdict."""

    new: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    candidates: dict[int, list[Candidate]] = field(default_factory=lambda: defaultdict(list))
    count: int = 0


def refresh_gaps(
    session: Session,
    groups: Groups,
    predictions: dict[PredictionKey, list[Predicted]],
    context: RefreshContext,
) -> tuple[int, int]:
    """The gap and verdict of every benchmark of these groups against each of its predictions; returns
    how many gaps there are and how many alerts were newly raised."""
    existing = _stored(session, [b.id for key in predictions for b in groups[key]])
    judged = _Judged()
    references = context.references
    for key, predicted in predictions.items():
        # what every benchmark of the group shares is worked out once per prediction
        judgings = _judgings(key, predicted, context)
        # how a benchmark without a reference of its own is judged against each: worked out at the first
        shared: list[_AsJudged | None] = [None] * len(judgings)
        for bench in groups[key]:
            reference = references.get(bench.id) if references else None
            for index, judging in enumerate(judgings):
                if reference is not None:
                    as_judged = _as_judged(judging.prediction, reference, key)
                else:
                    as_judged = shared[index] or _as_judged(judging.prediction, None, key)
                    shared[index] = as_judged
                _judge(judged, existing, bench, judging, as_judged, context)
    connection = session.connection()
    # the new gaps' ids are those above the largest before the insert (the refresh holds the store's
    # write lock): read back by a range of the primary key, not by benchmark
    before = (connection.scalar(select(func.max(Gap.id))) or 0) if judged.new else 0
    insert_rows(session, Gap, judged.new)
    update_rows(session, Gap, judged.changed)
    gap_ids = {pair: stored.id for pair, stored in existing.items()}
    if judged.new:
        for gap_id, benchmark_id, prediction_id in connection.execute(
            select(Gap.id, Gap.benchmark_id, Gap.prediction_id).where(Gap.id > before)
        ):
            gap_ids[(benchmark_id, prediction_id)] = gap_id
    return judged.count, write_verdicts(session, judged.candidates, gap_ids, context.now)


def _stored(session: Session, benchmark_ids: list[int]) -> dict[tuple[int, int], Stored]:
    """(benchmark, prediction) -> the stored gap's id and values."""
    # diagnoses are compared as the JSON text stored, not decoded row by row
    columns = [
        type_coerce(Gap.__table__.c[name], Text).label(name) if name == "diagnoses" else Gap.__table__.c[name]
        for name in GAP_VALUES
    ]
    # plain tuples sliced in C: they compare equal to the GapValues they are compared with
    return {
        (row[1], row[2]): Stored(row[0], row[3:])
        for row in select_in(
            session,
            select(Gap.id, Gap.benchmark_id, Gap.prediction_id, *columns),
            Gap.benchmark_id,
            benchmark_ids,
        )
    }


def _judgings(key: PredictionKey, predicted: list[Predicted], context: RefreshContext) -> list[_Judging]:
    """The group's predictions as its benchmarks are judged against them."""
    deployment = context.deployments[key.deployment_id]
    drafter = context.drafters[key.checkpoint_id]
    threshold = applicable_threshold(deployment.gap_threshold, context.global_threshold)
    measured_baseline = context.baselines.lookup(key.deployment_id, key.concurrency, key.dataset)
    out = []
    for prediction in predicted:
        pred = prediction.values
        gap_context = GapContext(
            decomposition=None,
            threshold=threshold,
            drafter_algorithm=drafter.speculative_algorithm,
            drafter_hidden_size=drafter.hidden_size,
            num_steps=key.steps,
            num_draft_tokens=key.draft_tokens,
            ttt_length=drafter.ttt_length,
            baseline_tps=measured_baseline or pred.baseline_tps or deployment.baseline_tps,
            baseline_measured=measured_baseline is not None,
            baseline_estimated=measured_baseline is None and bool(pred.baseline_estimated),
            deployment=deployment.name,
            concurrency=key.concurrency,
            prediction_source=prediction.source,
        )
        version = context.versions.get(pred.parameter_set_id) if pred.parameter_set_id is not None else None
        out.append(_Judging(prediction, gap_context, threshold, version))
    return out


def _judge(
    judged: _Judged,
    existing: dict[tuple[int, int], Stored],
    bench: BenchmarkRow,
    judging: _Judging,
    as_judged: _AsJudged,
    context: RefreshContext,
) -> None:
    """One benchmark against one prediction: its gap (new or changed), and the candidate for its verdict."""
    prediction = judging.prediction
    pred = prediction.values
    result, split, tau_source, tau_text = as_judged
    if result is None:
        result = _external_throughput(pred, bench)
    decomposition = decompose(result, bench.decode_tps, bench.accept_length if split else None)
    # the group's context with this benchmark's part set (diagnose keeps nothing of it)
    gap_context = judging.context
    gap_context.decomposition = decomposition
    gap_context.benchmark_algorithm = bench.speculative_algorithm
    gap_context.draft_hidden_size = bench.draft_hidden_size
    gap_context.accept_length_source = tau_source
    gap_context.acceptance_reference = tau_text
    gap_context.context_tokens = decode_context(bench.input_tokens, bench.output_tokens)
    gap_context.reference_context = context.reference_contexts.get(bench.deployment_id)
    diagnoses = diagnose(gap_context)
    judged.candidates[bench.id].append(
        Candidate(
            prediction.source,
            prediction.prediction_id,
            decomposition.gap,
            judging.threshold,
            pred.error_band,
            diagnoses,
            decomposition.acceptance_factor,
            tau_source,
            judging.version,
        )
    )
    _keep(judged, existing, bench.id, prediction.prediction_id, decomposition, diagnoses, context)


def _as_judged(prediction: Predicted, reference: Reference | None, key: PredictionKey) -> _AsJudged:
    """The prediction as a benchmark with this accept-length reference of its own (None: none) is
    judged against it: its throughput (None for an external one: it depends on the benchmark), whether
    the gap is split by the benchmark's measured tau, and where the predicted tau came from (source and
    the text a diagnosis cites)."""
    pred, result = prediction.values, prediction.result
    if result is None:  # external: only its tok/s and perhaps tau and round time are known
        # no predicted tau to split the gap against without one
        return _AsJudged(None, pred.accept_length is not None, pred.accept_length_source, "")
    # the prediction has its key's accept length; this benchmark may have a reference of its own
    # a prediction from training rates stores its tau, whether extrapolated, and the tree rule
    trained = cast(Trained, pred) if pred.accept_length_source == TauSource.TRAINING else None
    tau = choose_accept_length(trained, reference, (pred.accept_length,) if pred.accept_length else ())
    if tau is None:
        return _AsJudged(result, True, pred.accept_length_source, "")
    if tau.accept_length != result.accept_length:
        assert prediction.params is not None  # computed predictions carry their costs
        result = throughput(prediction.params, tau.accept_length, key.steps, key.draft_tokens, key.topk)
    return _AsJudged(result, True, tau.source, tau.reference)


def _gap_values(decomposition: GapDecomposition, diagnoses: list[Diagnosis]) -> dict[str, Any]:
    return dict(
        gap=decomposition.gap,
        measured_tps=decomposition.measured_tps,
        predicted_tps=decomposition.predicted_tps,
        measured_round_ms=decomposition.measured_round_ms,
        predicted_round_ms=decomposition.predicted_round_ms,
        acceptance_factor=decomposition.acceptance_factor,
        round_factor=decomposition.round_factor,
        unexplained_ms=decomposition.unexplained_ms,
        diagnoses=[d.as_dict() for d in diagnoses],
        severity=worst_severity(diagnoses),
    )


def _keep(
    judged: _Judged,
    existing: dict[tuple[int, int], Stored],
    benchmark_id: int,
    prediction_id: int,
    decomposition: GapDecomposition,
    diagnoses: list[Diagnosis],
    context: RefreshContext,
) -> None:
    """Queue the gap's row: new, or rewritten when its numbers changed (compared as stored, a plain
    tuple; the row's dict is built only for a row to write)."""
    stored = existing.get((benchmark_id, prediction_id))
    if stored is None:
        judged.new.append(
            dict(
                benchmark_id=benchmark_id,
                prediction_id=prediction_id,
                updated_at=context.now,
                **_gap_values(decomposition, diagnoses),
            )
        )
    elif stored.values != _stored_form(decomposition, diagnoses):
        judged.changed.append(
            dict(id=stored.id, updated_at=context.now, **_gap_values(decomposition, diagnoses))
        )
    judged.count += 1


def _stored_form(decomposition: GapDecomposition, diagnoses: list[Diagnosis]) -> tuple[Any, ...]:
    """A gap's GAP_VALUES as _stored reads them back: diagnoses as their JSON text."""
    d = decomposition
    text = json.dumps([diagnosis.as_dict() for diagnosis in diagnoses]) if diagnoses else "[]"
    return (
        d.gap,
        d.measured_tps,
        d.predicted_tps,
        d.measured_round_ms,
        d.predicted_round_ms,
        d.acceptance_factor,
        d.round_factor,
        d.unexplained_ms,
        text,
        worst_severity(diagnoses) if diagnoses else None,
    )


def _external_throughput(pred: PredictionValues, bench: BenchmarkRow) -> Throughput:
    tau = pred.accept_length or bench.accept_length or 1.0
    round_ms = pred.round_ms or 1000.0 * tau / pred.predicted_tps
    return Throughput(
        accept_length=tau,
        round=RoundTime(compute_ms=round_ms, comm_ms=0.0, draft_ms=0.0, overhead_ms=0.0),
        tps=pred.predicted_tps,
        speedup=float("nan"),
        break_even_accept_length=float("nan"),
    )


def benchmark_gap_rows(session: Session, benchmark_ids: list[int]) -> list[dict[str, Any]]:
    """Each gap of these benchmarks, in benchmark order: its numbers, severity and diagnosis codes."""
    rows = [
        row
        for chunk in chunks(benchmark_ids)
        for row in session.execute(
            select(
                Gap.benchmark_id, Gap.gap, Gap.measured_tps, Gap.predicted_tps, Gap.severity, Gap.diagnoses
            )
            .where(Gap.benchmark_id.in_(chunk))
            .order_by(Gap.benchmark_id)
        )
    ]
    return [
        dict(
            benchmark_id=b,
            gap=g,
            measured_tps=m,
            predicted_tps=p,
            severity=s,
            diagnoses=[d["code"] for d in (diag or [])],
        )
        for b, g, m, p, s, diag in rows
    ]
