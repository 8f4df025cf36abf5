"""Gaps of a batch of benchmarks: each benchmark against each of its group's predictions, split into its
acceptance and round-time parts and diagnosed by the cost model, written in bulk where the numbers
changed; then every benchmark's verdict (db/verdicts.py) from its candidates."""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple, cast

from sqlalchemy import Row, Text, select, type_coerce
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
from specdash.costmodel.diagnoses import worst_severity
from specdash.costmodel.sources import Trained, choose_accept_length
from specdash.db.bulk import chunks, insert_rows, select_in, update_rows
from specdash.db.history import Reference
from specdash.db.models import Deployment, Gap
from specdash.db.predictions import Groups, Predicted, PredictionKey, PredictionValues, Stored
from specdash.db.refresh_context import Drafter, RefreshContext
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


# a gap's numbers before its diagnoses and severity (the last two of GAP_VALUES), read in one C-level call
_NUMBERS_OF = itemgetter(*GAP_VALUES[:-2])


class _Group(NamedTuple):
    """What every benchmark of one prediction key is judged with."""

    key: PredictionKey
    deployment: Deployment
    drafter: Drafter
    threshold: float
    measured_baseline: float | None


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
    for key, predicted in predictions.items():
        deployment = context.deployments[key.deployment_id]
        group = _Group(
            key,
            deployment,
            context.drafters[key.checkpoint_id],
            applicable_threshold(deployment.gap_threshold, context.global_threshold),
            context.baselines.lookup(key.deployment_id, key.concurrency, key.dataset),
        )
        for bench in groups[key]:
            reference = context.references.get(bench.id)
            for prediction in predicted:
                _judge(judged, existing, group, bench, prediction, reference, context)
    insert_rows(session, Gap, judged.new)
    update_rows(session, Gap, judged.changed)
    gap_ids = {pair: stored.id for pair, stored in existing.items()}
    if judged.new:
        for row in select_in(
            session,
            select(Gap.id, Gap.benchmark_id, Gap.prediction_id),
            Gap.benchmark_id,
            sorted({row["benchmark_id"] for row in judged.new}),
        ):
            gap_ids[(row.benchmark_id, row.prediction_id)] = row.id
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


def _judge(
    judged: _Judged,
    existing: dict[tuple[int, int], Stored],
    group: _Group,
    bench: Row,
    prediction: Predicted,
    reference: Reference | None,
    context: RefreshContext,
) -> None:
    """One benchmark against one prediction: its gap (new or changed), and the candidate for its verdict."""
    pred, key, drafter = prediction.values, group.key, group.drafter
    result, measured_tau, tau_source, tau_text = _as_judged(prediction, bench, reference, key)
    decomposition = decompose(result, bench.decode_tps, measured_tau)
    diagnoses = diagnose(
        GapContext(
            decomposition=decomposition,
            threshold=group.threshold,
            benchmark_algorithm=bench.speculative_algorithm,
            drafter_algorithm=drafter.speculative_algorithm,
            draft_hidden_size=bench.draft_hidden_size,
            drafter_hidden_size=drafter.hidden_size,
            num_steps=key.steps,
            num_draft_tokens=key.draft_tokens,
            ttt_length=drafter.ttt_length,
            baseline_tps=group.measured_baseline or pred.baseline_tps or group.deployment.baseline_tps,
            baseline_measured=group.measured_baseline is not None,
            baseline_estimated=group.measured_baseline is None and bool(pred.baseline_estimated),
            deployment=group.deployment.name,
            concurrency=key.concurrency,
            accept_length_source=tau_source,
            acceptance_reference=tau_text,
        )
    )
    version = context.versions.get(pred.parameter_set_id) if pred.parameter_set_id is not None else None
    judged.candidates[bench.id].append(
        Candidate(
            source=prediction.source,
            prediction_id=prediction.prediction_id,
            gap=decomposition.gap,
            threshold=group.threshold,
            band=pred.error_band,
            diagnoses=diagnoses,
            acceptance_factor=decomposition.acceptance_factor,
            accept_length_source=tau_source,
            version=version,
        )
    )
    _keep(
        judged, existing, bench.id, prediction.prediction_id, _gap_values(decomposition, diagnoses), context
    )


def _as_judged(
    prediction: Predicted, bench: Row, reference: Reference | None, key: PredictionKey
) -> tuple[Throughput, float | None, str | None, str]:
    """The prediction as this benchmark is judged against it: its throughput (with the benchmark's own
    accept-length reference where it has one), the measured tau to split the gap by, and where the
    predicted tau came from (source and the text a diagnosis cites)."""
    pred, result = prediction.values, prediction.result
    if result is None:  # external: only its tok/s and perhaps tau and round time are known
        # no predicted tau to split the gap against without one
        measured_tau = bench.accept_length if pred.accept_length is not None else None
        return _external_throughput(pred, bench), measured_tau, pred.accept_length_source, ""
    # the prediction has its key's accept length; this benchmark may have a reference of its own
    # a prediction from training rates stores its tau, whether extrapolated, and the tree rule
    trained = cast(Trained, pred) if pred.accept_length_source == "training" else None
    tau = choose_accept_length(trained, reference, (pred.accept_length,) if pred.accept_length else ())
    if tau is None:
        return result, bench.accept_length, pred.accept_length_source, ""
    if tau.accept_length != result.accept_length:
        assert prediction.params is not None  # computed predictions carry their costs
        result = throughput(prediction.params, tau.accept_length, key.steps, key.draft_tokens, key.topk)
    return result, bench.accept_length, tau.source, tau.reference


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
    values: dict[str, Any],
    context: RefreshContext,
) -> None:
    """Queue the gap's row: new, or rewritten when its numbers changed (compared as stored)."""
    stored = existing.get((benchmark_id, prediction_id))
    if stored is None:
        judged.new.append(
            dict(benchmark_id=benchmark_id, prediction_id=prediction_id, updated_at=context.now, **values)
        )
    elif stored.values != (*_NUMBERS_OF(values), json.dumps(values["diagnoses"]), values["severity"]):
        judged.changed.append(dict(id=stored.id, updated_at=context.now, **values))
    judged.count += 1


def _external_throughput(pred: PredictionValues, bench: Row) -> Throughput:
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
