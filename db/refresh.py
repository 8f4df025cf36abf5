"""Recompute cost-model predictions, gaps and each benchmark's verdict (db/verdicts.py) for stored benchmarks.

Reads what the cost model needs from the store as plain rows, calls costmodel/, and writes back in bulk
(one executemany per kind of change) only the predictions, gaps and verdicts whose numbers changed; the
status and note of an existing alert are kept. No ORM object per benchmark: tens of thousands take seconds."""

import gc
import json
import statistics
from collections import defaultdict, namedtuple
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from operator import attrgetter
from typing import NamedTuple

from sqlalchemy import Text, select, type_coerce
from sqlalchemy.orm import Session

from specdash.costmodel import (
    CostParams,
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
from specdash.costmodel.priors import DeploymentFacts, drafter_family
from specdash.costmodel.uncertainty import prior_error_band
from specdash.db.bulk import chunks, expire_loaded, insert_rows, select_in, select_tuples_in, update_rows
from specdash.db.models import (
    BENCHMARK_SETTING,
    BUILTIN_SOURCES,
    Alert,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    ParameterSet,
    PositionAcceptance,
    Prediction,
    Run,
    utcnow,
)
from specdash.db.parameters import (
    Baselines,
    cost_params,
    deployment_facts,
    ensure_theory_set,
    fit_error_band,
    load_baselines,
)
from specdash.db.settings import applicable_threshold, get_gap_threshold
from specdash.db.verdicts import Candidate, acceptance_references, write_verdicts

BATCH = 10_000  # benchmarks refreshed at a time

BENCHMARK_COLUMNS = (
    Benchmark.id,
    Benchmark.checkpoint_id,
    Benchmark.deployment_id,
    *BENCHMARK_SETTING,
    Benchmark.decode_tps,
    Benchmark.accept_length,
    Benchmark.draft_hidden_size,
)
PREDICTION_KEY = (
    Prediction.checkpoint_id,
    Prediction.deployment_id,
    Prediction.num_steps,
    Prediction.topk,
    Prediction.num_draft_tokens,
    Prediction.concurrency,
    Prediction.dataset,
)
PREDICTION_VALUES = (
    "parameter_set_id",
    "predicted_tps",
    "accept_length",
    "accept_length_source",
    "round_ms",
    "compute_ms",
    "comm_ms",
    "draft_ms",
    "overhead_ms",
    "baseline_tps",
    "extrapolated",
    "approximation",
    "error_band",
)
PredictionValues = namedtuple("PredictionValues", PREDICTION_VALUES)
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
GapValues = namedtuple("GapValues", GAP_VALUES)  # diagnoses as the JSON text stored


class PredictionKey(NamedTuple):
    """What one prediction covers; the benchmarks of a group share it (columns of PREDICTION_KEY)."""

    checkpoint_id: int
    deployment_id: int
    steps: int
    topk: int
    draft_tokens: int
    concurrency: int
    dataset: str


class Stored(NamedTuple):
    """A row already in the store: its id and the values compared before rewriting (None: just inserted)."""

    id: int
    values: tuple | None


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


def _prediction_key(bench, steps: int) -> PredictionKey:
    draft_tokens = verified_tokens(steps, bench.topk or 1, bench.num_draft_tokens)
    return PredictionKey(
        bench.checkpoint_id,
        bench.deployment_id,
        steps,
        bench.topk or 1,
        draft_tokens,
        bench.concurrency,
        bench.dataset or "",
    )


# Rows read back by column name, in one C-level call per row (tens of thousands of rows per refresh).
_KEY_COLUMNS = attrgetter(*(column.key for column in PREDICTION_KEY))
_PREDICTION_VALUES_OF = attrgetter(*PREDICTION_VALUES)
_GAP_VALUES_OF = attrgetter(*GAP_VALUES)


def _key_of(row) -> PredictionKey:
    """The PredictionKey of a row selected with the PREDICTION_KEY columns."""
    return PredictionKey._make(_KEY_COLUMNS(row))


def _select_keys(session: Session, query, keys: Iterable[PredictionKey]) -> Iterator:
    """Rows of `query` (on predictions) whose PREDICTION_KEY columns are one of `keys`: a batch reads
    its own predictions, not every prediction of its checkpoints."""
    return select_tuples_in(session, query, PREDICTION_KEY, keys)


def _select_predictions(session: Session, query, keys, checkpoint_ids: list[int] | None) -> Iterator:
    """Rows of `query` (on predictions) for these keys: every prediction of `checkpoint_ids` when given (a
    batch that holds them whole), else by key."""
    if checkpoint_ids is None:
        yield from _select_keys(session, query, keys)
    else:
        yield from select_in(session, query, Prediction.checkpoint_id, checkpoint_ids)


def _key_of_values(row: dict) -> PredictionKey:
    return PredictionKey(*(row[column.key] for column in PREDICTION_KEY))


def _scope(session: Session, benchmark_ids: Iterable[int] | None) -> dict[int, list[int]]:
    """The speculative benchmarks to refresh (all, or those given and every one on a deployment and load
    that a given no-speculation baseline changes), as ids per checkpoint."""
    # reads go through the Core connection: column tuples without the ORM's result machinery
    connection = session.connection()
    query = select(Benchmark.checkpoint_id, Benchmark.id).where(
        Benchmark.checkpoint_id.is_not(None), Benchmark.speculative_algorithm.is_not(None)
    )
    if benchmark_ids is None:
        rows = connection.execute(query).all()
    else:
        touched = [
            row
            for chunk in chunks(list(benchmark_ids))
            for row in connection.execute(
                select(
                    Benchmark.checkpoint_id,
                    Benchmark.id,
                    Benchmark.deployment_id,
                    Benchmark.concurrency,
                    Benchmark.speculative_algorithm,
                ).where(Benchmark.id.in_(chunk))
            )
        ]
        # A new baseline changes the prediction of every benchmark on its deployment and concurrency.
        baseline_keys = {(d, c) for _, _, d, c, algo in touched if algo is None}
        rows = [(cid, i) for cid, i, _, _, algo in touched if algo is not None and cid is not None]
        for deployment_id, concurrency in baseline_keys:
            rows += connection.execute(
                query.where(Benchmark.deployment_id == deployment_id, Benchmark.concurrency == concurrency)
            ).all()
    scope: dict[int, set[int]] = defaultdict(set)
    for checkpoint_id, benchmark_id in rows:
        scope[checkpoint_id].add(benchmark_id)
    return {checkpoint_id: sorted(ids) for checkpoint_id, ids in scope.items()}


def _rows(session: Session, ids: list[int]) -> list:
    """The cost model's columns (BENCHMARK_COLUMNS) of these benchmarks, in id order."""
    connection = session.connection()
    query = select(*BENCHMARK_COLUMNS).order_by(Benchmark.id)
    return [row for chunk in chunks(ids) for row in connection.execute(query.where(Benchmark.id.in_(chunk)))]


@dataclass(frozen=True)
class _Drafter:
    """What a checkpoint tells the cost model: its run's identity and its trained rates."""

    speculative_algorithm: str | None
    hidden_size: int | None
    ttt_length: int | None
    run_id: int
    rates: tuple[float, ...]


def _drafters(session: Session, checkpoint_ids: list[int] | None) -> dict[int, _Drafter]:
    rates: dict[int, list[float]] = defaultdict(list)
    runs = {}
    for checkpoint_id, rate in select_in(
        session,
        select(PositionAcceptance.checkpoint_id, PositionAcceptance.rate).order_by(
            PositionAcceptance.checkpoint_id, PositionAcceptance.position
        ),
        PositionAcceptance.checkpoint_id,
        checkpoint_ids,
    ):
        rates[checkpoint_id].append(rate)
    for checkpoint_id, *run in select_in(
        session,
        select(Checkpoint.id, Run.speculative_algorithm, Run.hidden_size, Run.ttt_length, Run.id).join(
            Run, Checkpoint.run_id == Run.id
        ),
        Checkpoint.id,
        checkpoint_ids,
    ):
        runs[checkpoint_id] = run
    return {cid: _Drafter(*run, tuple(rates.get(cid, ()))) for cid, run in runs.items()}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """A refresh allocates a few objects per benchmark, none in reference cycles; the cyclic collector
    would otherwise walk every live object of the process (a dashboard's, a benchmark harness's) many
    times over. Paused for the refresh, it runs once afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def refresh(session: Session, benchmark_ids: Iterable[int] | None = None) -> RefreshSummary:
    """Predictions for every (checkpoint, deployment, setting, concurrency, dataset) among the benchmarks
    in scope (all, or those given and what a new baseline affects), and their gaps."""
    with _gc_paused():
        return _refresh(session, benchmark_ids)


def _refresh(session: Session, benchmark_ids: Iterable[int] | None) -> RefreshSummary:
    session.flush()  # what the caller added is read back below as rows
    summary = RefreshSummary()
    scope = _scope(session, benchmark_ids)
    if not scope:
        return summary
    global_threshold = get_gap_threshold(session)
    baselines = load_baselines(session)
    deployments = {d.id: d for d in session.scalars(select(Deployment))}
    for deployment in deployments.values():
        ensure_theory_set(session, deployment)
    sets_by_deployment: dict[int, list[ParameterSet]] = defaultdict(list)
    for pset in session.scalars(select(ParameterSet).where(ParameterSet.is_active.is_(True))):
        sets_by_deployment[pset.deployment_id].append(pset)
    everything = benchmark_ids is None
    drafters = _drafters(session, None if everything else sorted(scope))
    psets = {pset.id: pset for sets in sets_by_deployment.values() for pset in sets}
    facts = {deployment_id: deployment_facts(d) for deployment_id, d in deployments.items()}
    context = _Context(
        deployments, drafters, sets_by_deployment, psets, baselines, facts, {}, global_threshold, utcnow()
    )
    # A few checkpoints at a time, and their groups in batches: memory stays bounded by the largest
    # drafter's benchmarks, however many a file brings.
    for checkpoint_ids in _checkpoint_batches(scope):
        benches = _rows(session, [i for c in checkpoint_ids for i in scope[c]])
        summary.benchmarks += len(benches)
        groups: dict[tuple, list] = defaultdict(list)
        for bench in benches:
            steps = benchmark_steps(bench)
            if steps is None:
                summary.skipped += 1
                continue
            groups[_prediction_key(bench, steps)].append(bench)
        # drafters without training metrics: their own earlier benchmarks say what accept length to expect
        untrained = [c for c in checkpoint_ids if not drafters[c].rates]
        references = acceptance_references(session, untrained, benchmark_steps)
        if not everything and untrained:
            # a benchmark measured before stored ones (a backfill) changes their references: judge them again
            known = {b.id for b in benches}
            for bench in select_in(
                session,
                select(*BENCHMARK_COLUMNS).where(Benchmark.speculative_algorithm.is_not(None)),
                Benchmark.checkpoint_id,
                untrained,
            ):
                steps = benchmark_steps(bench)
                if bench.id not in known and steps is not None:
                    groups[_prediction_key(bench, steps)].append(bench)
                    known.add(bench.id)
        part = replace(context, references=references)
        batches = list(_batches(groups))
        # one batch holds these checkpoints whole: their predictions are read by checkpoint, in a few
        # statements; a drafter split over batches reads each batch's own by key
        whole = checkpoint_ids if len(batches) == 1 else None
        for batch in batches:
            predictions = _refresh_predictions(session, batch, part, summary, whole)
            _refresh_gaps(session, batch, predictions, part, summary)
    expire_loaded(session, (Prediction, Gap, Alert))
    return summary


def _checkpoint_batches(scope: dict[int, list[int]]) -> Iterator[list[int]]:
    """Consecutive checkpoints with about BATCH benchmarks in all (a checkpoint is never split)."""
    batch, size = [], 0
    for checkpoint_id in sorted(scope):
        batch.append(checkpoint_id)
        size += len(scope[checkpoint_id])
        if size >= BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


@dataclass(frozen=True)
class _Context:
    """What every batch of a refresh shares: read once per refresh."""

    deployments: dict[int, Deployment]
    drafters: dict[int, "_Drafter"]
    sets_by_deployment: dict[int, list[ParameterSet]]
    psets: dict[int, ParameterSet]
    baselines: Baselines
    facts: dict[int, DeploymentFacts]
    references: dict
    global_threshold: float
    now: object


def _batches(groups: dict[PredictionKey, list]) -> Iterator[dict[PredictionKey, list]]:
    """Consecutive groups of about BATCH benchmarks in all (a group is never split)."""
    batch, size = {}, 0
    for key, members in groups.items():
        batch[key] = members
        size += len(members)
        if size >= BATCH:
            yield batch
            batch, size = {}, 0
    if batch:
        yield batch


def _refresh_gaps(session: Session, groups, predictions, context: _Context, summary: RefreshSummary) -> None:
    """The gap and verdict of every benchmark of these groups against each of its predictions."""
    deployments, drafters, baselines = context.deployments, context.drafters, context.baselines
    references, psets, global_threshold, now = (
        context.references,
        context.psets,
        context.global_threshold,
        context.now,
    )

    bench_ids = [b.id for key in predictions for b in groups[key]]
    # diagnoses are compared as the JSON text stored, not decoded row by row
    gap_columns = [
        type_coerce(Gap.__table__.c[name], Text).label(name) if name == "diagnoses" else Gap.__table__.c[name]
        for name in GAP_VALUES
    ]
    existing_gaps = {
        (row.benchmark_id, row.prediction_id): Stored(row.id, GapValues._make(_GAP_VALUES_OF(row)))
        for row in select_in(
            session,
            select(Gap.id, Gap.benchmark_id, Gap.prediction_id, *gap_columns),
            Gap.benchmark_id,
            bench_ids,
        )
    }
    new_gaps, changed_gaps = [], []
    candidates: dict[int, list[Candidate]] = defaultdict(list)
    for key, preds in predictions.items():
        deployment = deployments[key.deployment_id]
        drafter = drafters[key.checkpoint_id]
        steps, draft_tokens, concurrency, dataset = key.steps, key.draft_tokens, key.concurrency, key.dataset
        measured_baseline = baselines.lookup(key.deployment_id, concurrency, dataset)
        threshold = applicable_threshold(deployment.gap_threshold, global_threshold)
        for bench in groups[key]:
            reference = references.get(bench.id)
            for prediction_id, pred, result, source, params in preds:
                measured_tau = bench.accept_length
                tau_source, tau_text = pred.accept_length_source, ""
                if result is None:  # external: only its tok/s and perhaps tau and round time are known
                    result = _external_throughput(pred, bench)
                    if pred.accept_length is None:
                        measured_tau = None  # no predicted tau to split the gap against
                elif tau_source in ("history", "measured"):
                    if reference is not None:  # this benchmark's own reference (the prediction has its key's)
                        tau_source, tau_text = "history", reference.text
                        if reference.accept_length != result.accept_length:
                            result = throughput(
                                params, reference.accept_length, steps, draft_tokens, key.topk
                            )
                    else:
                        tau_source = "measured"
                elif tau_source == "training":
                    tau_text = f"tau {pred.accept_length:.2f} from its training acc_i"
                decomposition = decompose(result, bench.decode_tps, measured_tau)
                diagnoses = diagnose(
                    GapContext(
                        decomposition=decomposition,
                        threshold=threshold,
                        benchmark_algorithm=bench.speculative_algorithm,
                        drafter_algorithm=drafter.speculative_algorithm,
                        draft_hidden_size=bench.draft_hidden_size,
                        drafter_hidden_size=drafter.hidden_size,
                        num_steps=steps,
                        num_draft_tokens=draft_tokens,
                        ttt_length=drafter.ttt_length,
                        baseline_tps=measured_baseline or pred.baseline_tps or deployment.baseline_tps,
                        baseline_measured=measured_baseline is not None,
                        deployment=deployment.name,
                        concurrency=concurrency,
                        accept_length_source=tau_source,
                        acceptance_reference=tau_text,
                    )
                )
                pset = psets.get(pred.parameter_set_id)
                candidates[bench.id].append(
                    Candidate(
                        source=source,
                        prediction_id=prediction_id,
                        gap=decomposition.gap,
                        threshold=threshold,
                        band=pred.error_band,
                        diagnoses=diagnoses,
                        acceptance_factor=decomposition.acceptance_factor,
                        accept_length_source=tau_source,
                        version=pset.version if pset is not None else None,
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
                existing = existing_gaps.get((bench.id, prediction_id))
                compared = GapValues(**dict(values, diagnoses=json.dumps(values["diagnoses"])))
                if existing is None:
                    new_gaps.append(
                        dict(benchmark_id=bench.id, prediction_id=prediction_id, updated_at=now, **values)
                    )
                elif existing.values != compared:  # rewrite only what changed
                    changed_gaps.append(dict(id=existing.id, updated_at=now, **values))
                summary.gaps += 1
    if new_gaps:
        insert_rows(session, Gap, new_gaps)
    if changed_gaps:
        update_rows(session, Gap, changed_gaps)
    gap_ids = {pair: stored.id for pair, stored in existing_gaps.items()}
    if new_gaps:
        for row in select_in(
            session,
            select(Gap.id, Gap.benchmark_id, Gap.prediction_id),
            Gap.benchmark_id,
            sorted({row["benchmark_id"] for row in new_gaps}),
        ):
            gap_ids[(row.benchmark_id, row.prediction_id)] = row.id
    summary.new_alerts += write_verdicts(session, candidates, gap_ids, now)


def _refresh_predictions(
    session: Session,
    groups,
    context: _Context,
    summary: RefreshSummary,
    checkpoint_ids: list[int] | None = None,
) -> dict[tuple, list[tuple[int, PredictionValues, Throughput | None, str, CostParams | None]]]:
    """Each group's prediction under every active parameter set of its deployment (written in bulk),
    then the external predictions of the same key (result None: compared, not recomputed)."""
    drafters, sets_by_deployment, baselines, now = (
        context.drafters,
        context.sets_by_deployment,
        context.baselines,
        context.now,
    )
    facts, references = context.facts, context.references
    # key -> source -> (prediction id, its stored values)
    existing: dict[PredictionKey, dict[str, Stored]] = defaultdict(dict)
    value_columns = [Prediction.__table__.c[name] for name in PREDICTION_VALUES]
    for row in _select_predictions(
        session,
        select(Prediction.id, *PREDICTION_KEY, Prediction.source, *value_columns),
        groups,
        checkpoint_ids,
    ):
        existing[_key_of(row)][row.source] = Stored(
            row.id, PredictionValues._make(_PREDICTION_VALUES_OF(row))
        )

    # parameter sets as plain tuples, and CostParams built once per (set, baseline)
    psets = {pset.id: pset for sets in sets_by_deployment.values() for pset in sets}
    plans = defaultdict(
        list,
        {
            deployment_id: [
                (p.id, p.source, p.acc_to_acceptance, p.baseline_tps, fit_error_band(p.fit), p.comm_fraction)
                for p in sets
            ]
            for deployment_id, sets in sets_by_deployment.items()
        },
    )
    params_cache: dict[tuple, CostParams] = {}
    # tau depends on the checkpoint and setting, not the deployment: computed once for all deployments
    tau_cache: dict[tuple, object] = {}
    computed: dict[tuple, list[tuple[str, PredictionValues, Throughput, CostParams]]] = {}
    new_rows, changed_rows = [], []
    for key, group in groups.items():
        checkpoint_id, deployment_id, steps, topk, draft_tokens, concurrency, dataset = key
        drafter = drafters[checkpoint_id]
        rates = drafter.rates
        family = drafter_family(drafter.speculative_algorithm, group[0].speculative_algorithm)
        measured_baseline = baselines.lookup(deployment_id, concurrency, dataset)
        measured_taus = [b.accept_length for b in group if b.accept_length]
        results = []
        for pset_id, source, acc_to_acceptance, profile_baseline, fitted_band, comm_fraction in plans[
            deployment_id
        ]:
            # at a load without a no-speculation benchmark: interpolated between the measured loads
            baseline_tps = (
                measured_baseline
                or baselines.at_load(
                    deployment_id, concurrency, dataset, facts[deployment_id], comm_fraction or 0.0
                )
                or profile_baseline
            )
            if not baseline_tps:
                continue
            fit = psets[pset_id].fit or {}
            # a calibrated set's drafting and overhead were fitted at its reference load
            reference_tps = baselines.at_reference(
                deployment_id, fit, concurrency, dataset, facts[deployment_id], comm_fraction or 0.0
            )
            if rates:
                tau_key = (checkpoint_id, steps, topk, draft_tokens, acc_to_acceptance)
                tau = tau_cache.get(tau_key)
                if tau is None:
                    tau = tau_cache[tau_key] = predict_accept_length(
                        rates, steps, topk, draft_tokens, acc_to_acceptance
                    )
                accept_length, extrapolated, approximation = (
                    tau.accept_length,
                    tau.extrapolated,
                    tau.approximation,
                )
                tau_source = "training"
            elif (latest := references.get(max(b.id for b in group))) is not None:
                accept_length, extrapolated, approximation = latest.accept_length, False, None
                tau_source = "history"
            elif measured_taus:
                accept_length, extrapolated, approximation = statistics.fmean(measured_taus), False, None
                tau_source = "measured"
            else:
                continue
            # a set's costs differ by drafter and dataset only when its fit has per-drafter or per-dataset values
            params_key = (
                pset_id,
                baseline_tps,
                family,
                concurrency,
                draft_tokens,
                drafter.run_id if fit.get("draft_step_ms_by_drafter") else None,
                dataset if fit.get("round_scale_by_dataset") else None,
                reference_tps,
            )
            params = params_cache.get(params_key)
            if params is None:
                params = params_cache[params_key] = cost_params(
                    psets[pset_id],
                    baseline_tps,
                    facts[deployment_id],
                    family,
                    concurrency,
                    draft_tokens,
                    drafter.run_id,
                    dataset,
                    reference_tps,
                )
            result = throughput(params, accept_length, steps, draft_tokens, topk)
            round_ = result.round
            values = PredictionValues(
                parameter_set_id=pset_id,
                predicted_tps=result.tps,
                accept_length=accept_length,
                accept_length_source=tau_source,
                round_ms=result.round_ms,
                compute_ms=round_.compute_ms,
                comm_ms=round_.comm_ms,
                draft_ms=round_.draft_ms,
                overhead_ms=round_.overhead_ms,
                baseline_tps=baseline_tps,
                extrapolated=extrapolated,
                approximation=approximation,
                error_band=fitted_band if fitted_band is not None else prior_error_band(tau_source),
            )
            stored = existing[key].get(source)
            if stored is None:
                new_rows.append(
                    dict(
                        checkpoint_id=checkpoint_id,
                        deployment_id=deployment_id,
                        num_steps=steps,
                        topk=topk,
                        num_draft_tokens=draft_tokens,
                        concurrency=concurrency,
                        dataset=dataset,
                        source=source,
                        created_at=now,
                        **values._asdict(),
                    )
                )
            elif values != stored.values:
                # created_at says when these numbers were computed: unchanged ones keep theirs
                changed_rows.append(dict(id=stored.id, created_at=now, **values._asdict()))
            results.append((source, values, result, params))
            summary.predictions += 1
        computed[key] = results
    if new_rows:
        insert_rows(session, Prediction, new_rows)
        # read the new ids back by their unique key
        for row in _select_predictions(
            session,
            select(Prediction.id, *PREDICTION_KEY, Prediction.source).where(
                Prediction.source.in_(BUILTIN_SOURCES)
            ),
            {_key_of_values(row) for row in new_rows},
            checkpoint_ids,
        ):
            existing[_key_of(row)].setdefault(row.source, Stored(row.id, None))
    if changed_rows:
        update_rows(session, Prediction, changed_rows)

    out: dict[tuple, list[tuple[int, PredictionValues, Throughput | None, str, CostParams | None]]] = {}
    for key, group in groups.items():
        stored = existing[key]
        preds = [
            (stored[source].id, values, result, source, params)
            for source, values, result, params in computed[key]
        ]
        if len(stored) > len(preds):
            preds += [
                (row.id, row.values, None, source, None)
                for source, row in stored.items()
                if source not in BUILTIN_SOURCES
            ]
        if preds:
            out[key] = preds
        else:
            summary.skipped += len(group)
    return out


def _external_throughput(pred: PredictionValues, bench) -> Throughput:
    tau = pred.accept_length or bench.accept_length or 1.0
    round_ms = pred.round_ms or 1000.0 * tau / pred.predicted_tps
    return Throughput(
        accept_length=tau,
        round=RoundTime(compute_ms=round_ms, comm_ms=0.0, draft_ms=0.0, overhead_ms=0.0),
        tps=pred.predicted_tps,
        speedup=float("nan"),
        break_even_accept_length=float("nan"),
    )
