"""Recompute cost-model predictions and gaps (alerts) for stored benchmarks.

Reads what the cost model needs from the store, calls costmodel/, and writes predictions and gaps back;
the status and note of an existing alert are kept."""

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from specdash.costmodel import (
    GapContext,
    RoundTime,
    Throughput,
    decompose,
    diagnose,
    predict_accept_length,
    throughput,
    verified_tokens,
)
from specdash.costmodel.diagnoses import worst_severity
from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    ParameterSet,
    Prediction,
    utcnow,
)
from specdash.db.parameters import cost_params, ensure_theory_set, load_baselines
from specdash.db.settings import get_gap_threshold

BUILTIN_SOURCES = ("theory", "calibrated")


@dataclass
class RefreshSummary:
    benchmarks: int = 0
    predictions: int = 0
    gaps: int = 0
    new_alerts: int = 0
    skipped: int = 0


def benchmark_steps(bench) -> int | None:
    """K of a benchmark (a Benchmark or a row with its columns): given, or N - 1 for a chain; None when
    a tree does not say."""
    if bench.num_steps:
        return bench.num_steps
    if bench.num_draft_tokens and (bench.topk or 1) == 1:
        return bench.num_draft_tokens - 1
    return None


def _prediction_key(bench: Benchmark, steps: int) -> tuple:
    draft_tokens = verified_tokens(steps, bench.topk or 1, bench.num_draft_tokens)
    return (
        bench.checkpoint_id,
        bench.deployment_id,
        steps,
        bench.topk or 1,
        draft_tokens,
        bench.concurrency,
        bench.dataset or "",
    )


def _scope(session: Session, benchmark_ids: Iterable[int] | None) -> list[Benchmark]:
    query = select(Benchmark).where(
        Benchmark.checkpoint_id.is_not(None), Benchmark.speculative_algorithm.is_not(None)
    )
    if benchmark_ids is None:
        return list(session.scalars(query))
    ids = list(benchmark_ids)
    if not ids:
        return []
    touched = session.execute(
        select(Benchmark.id, Benchmark.deployment_id, Benchmark.concurrency, Benchmark.speculative_algorithm)
        .where(Benchmark.id.in_(ids))
    ).all()
    # A new baseline changes the prediction of every benchmark on its deployment and concurrency.
    baseline_keys = {(d, c) for _, d, c, algo in touched if algo is None}
    spec_ids = {i for i, _, _, algo in touched if algo is not None}
    rows = {b.id: b for b in session.scalars(query.where(Benchmark.id.in_(spec_ids)))} if spec_ids else {}
    for deployment_id, concurrency in baseline_keys:
        for bench in session.scalars(
            query.where(Benchmark.deployment_id == deployment_id, Benchmark.concurrency == concurrency)
        ):
            rows[bench.id] = bench
    return list(rows.values())


def refresh(session: Session, benchmark_ids: Iterable[int] | None = None) -> RefreshSummary:
    """Predictions for every (checkpoint, deployment, setting, concurrency, dataset) among the benchmarks
    in scope (all, or those given and what a new baseline affects), and their gaps."""
    summary = RefreshSummary()
    benches = _scope(session, benchmark_ids)
    if not benches:
        return summary
    summary.benchmarks = len(benches)
    global_threshold = get_gap_threshold(session)
    baselines = load_baselines(session)
    deployments = {d.id: d for d in session.scalars(select(Deployment))}
    checkpoint_ids = {b.checkpoint_id for b in benches}
    checkpoints = {
        c.id: c
        for c in session.scalars(
            select(Checkpoint)
            .where(Checkpoint.id.in_(checkpoint_ids))
            .options(selectinload(Checkpoint.position_acceptance), selectinload(Checkpoint.run))
        )
    }
    sets_by_deployment: dict[int, list[ParameterSet]] = defaultdict(list)
    for deployment in deployments.values():
        ensure_theory_set(session, deployment)
    for pset in session.scalars(select(ParameterSet).where(ParameterSet.is_active.is_(True))):
        sets_by_deployment[pset.deployment_id].append(pset)

    groups: dict[tuple, list[Benchmark]] = defaultdict(list)
    for bench in benches:
        steps = benchmark_steps(bench)
        if steps is None:
            summary.skipped += 1
            continue
        groups[_prediction_key(bench, steps)].append(bench)

    # existing predictions by key, then source; externals are kept as they are and only compared
    existing_predictions: dict[tuple, dict[str, Prediction]] = defaultdict(dict)
    for pred in session.scalars(select(Prediction).where(Prediction.checkpoint_id.in_(checkpoint_ids))):
        key = (pred.checkpoint_id, pred.deployment_id, pred.num_steps, pred.topk, pred.num_draft_tokens,
               pred.concurrency, pred.dataset)
        existing_predictions[key][pred.source] = pred
    bench_ids = [b.id for group in groups.values() for b in group]
    existing_gaps = {
        (g.benchmark_id, g.prediction_id): g
        for chunk_start in range(0, len(bench_ids), 5000)
        for g in session.scalars(
            select(Gap).where(Gap.benchmark_id.in_(bench_ids[chunk_start : chunk_start + 5000]))
        )
    }

    planned = []
    for key, group in groups.items():
        deployment_id, concurrency, dataset = key[1], key[5], key[6]
        measured_baseline = baselines.lookup(deployment_id, concurrency, dataset)
        predictions = _predict(session, key, group, checkpoints[key[0]], sets_by_deployment[deployment_id],
                               measured_baseline, existing_predictions[key])
        summary.predictions += sum(1 for _, result in predictions if result is not None)
        if not predictions:
            summary.skipped += len(group)
            continue
        planned.append((key, group, predictions, measured_baseline))
    session.flush()  # once, so that new predictions have ids

    for key, group, predictions, measured_baseline in planned:
        deployment = deployments[key[1]]
        run = checkpoints[key[0]].run
        steps, draft_tokens, concurrency = key[2], key[4], key[5]
        threshold = deployment.gap_threshold or global_threshold
        for bench in group:
            for pred, result in predictions:
                measured_tau = bench.accept_length
                if result is None:  # external: only its tok/s and perhaps tau and round time are known
                    result = _external_throughput(pred, bench)
                    if pred.accept_length is None:
                        measured_tau = None  # no predicted tau to split the gap against
                decomposition = decompose(result, bench.decode_tps, measured_tau)
                diagnoses = diagnose(
                    GapContext(
                        decomposition=decomposition,
                        threshold=threshold,
                        benchmark_algorithm=bench.speculative_algorithm,
                        drafter_algorithm=run.speculative_algorithm,
                        draft_hidden_size=bench.draft_hidden_size,
                        drafter_hidden_size=run.hidden_size,
                        num_steps=steps,
                        num_draft_tokens=draft_tokens,
                        ttt_length=run.ttt_length,
                        baseline_tps=measured_baseline or pred.baseline_tps or deployment.baseline_tps,
                        baseline_measured=measured_baseline is not None,
                        deployment=deployment.name,
                        concurrency=concurrency,
                    )
                )
                values = dict(
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
                gap = existing_gaps.get((bench.id, pred.id))
                if gap is None:
                    gap = Gap(benchmark_id=bench.id, prediction_id=pred.id, status="open", **values)
                    session.add(gap)
                    existing_gaps[(bench.id, pred.id)] = gap
                    if abs(decomposition.gap) >= threshold:
                        summary.new_alerts += 1
                else:
                    was_alert = abs(gap.gap) >= threshold
                    for name, value in values.items():
                        setattr(gap, name, value)
                    if not was_alert and abs(decomposition.gap) >= threshold:
                        summary.new_alerts += 1
                summary.gaps += 1
    session.flush()
    return summary


def _predict(
    session: Session,
    key: tuple,
    group: list[Benchmark],
    checkpoint: Checkpoint,
    parameter_sets: list[ParameterSet],
    measured_baseline: float | None,
    existing: dict[str, Prediction],
) -> list[tuple[Prediction, Throughput | None]]:
    """The group's prediction under each active parameter set (created or updated), then the external
    predictions of the same key (result None: they are compared, not recomputed)."""
    checkpoint_id, deployment_id, steps, topk, draft_tokens, concurrency, dataset = key
    rates = [p.rate for p in checkpoint.position_acceptance]
    measured_taus = [b.accept_length for b in group if b.accept_length]
    predictions: list[tuple[Prediction, Throughput | None]] = []
    for pset in parameter_sets:
        baseline_tps = measured_baseline or pset.baseline_tps
        if not baseline_tps:
            continue
        if rates:
            predicted = predict_accept_length(rates, steps, topk, draft_tokens, pset.acc_to_acceptance)
            tau, extrapolated, approximation = (
                predicted.accept_length, predicted.extrapolated, predicted.approximation
            )
            tau_source = "training"
        elif measured_taus:
            tau, extrapolated, approximation = statistics.fmean(measured_taus), False, None
            tau_source = "measured"
        else:
            continue
        result = throughput(cost_params(pset, baseline_tps), tau, steps, draft_tokens, topk)
        values = dict(
            parameter_set_id=pset.id,
            predicted_tps=result.tps,
            accept_length=tau,
            accept_length_source=tau_source,
            round_ms=result.round_ms,
            compute_ms=result.round.compute_ms,
            comm_ms=result.round.comm_ms,
            draft_ms=result.round.draft_ms,
            overhead_ms=result.round.overhead_ms,
            baseline_tps=baseline_tps,
            extrapolated=extrapolated,
            approximation=approximation,
        )
        pred = existing.get(pset.source)
        if pred is None:
            pred = Prediction(
                checkpoint_id=checkpoint_id,
                deployment_id=deployment_id,
                num_steps=steps,
                topk=topk,
                num_draft_tokens=draft_tokens,
                concurrency=concurrency,
                dataset=dataset,
                source=pset.source,
                **values,
            )
            session.add(pred)
            existing[pset.source] = pred
        else:
            for name, value in values.items():
                setattr(pred, name, value)
            pred.created_at = utcnow()
        predictions.append((pred, result))
    predictions += [(pred, None) for source, pred in existing.items() if source not in BUILTIN_SOURCES]
    return predictions


def _external_throughput(pred: Prediction, bench: Benchmark) -> Throughput:
    tau = pred.accept_length or bench.accept_length or 1.0
    round_ms = pred.round_ms or 1000.0 * tau / pred.predicted_tps
    return Throughput(
        accept_length=tau,
        round=RoundTime(compute_ms=round_ms, comm_ms=0.0, draft_ms=0.0, overhead_ms=0.0),
        tps=pred.predicted_tps,
        speedup=float("nan"),
        break_even_accept_length=float("nan"),
    )
