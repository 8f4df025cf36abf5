"""Predictions of a batch of benchmark groups: one per group (checkpoint, deployment, setting, load,
dataset) under each active parameter set of its deployment, written in bulk where their numbers changed,
and the external predictions of the same keys (compared with, never recomputed).

The numbers come from the cost model: the baseline and accept length by costmodel/sources.py, the costs
by the set's CostSet, tok/s by costmodel.throughput."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from operator import attrgetter
from typing import Any, NamedTuple

from sqlalchemy import Row, func, select
from sqlalchemy.orm import Session

from specdash.costmodel import CostParams, Throughput, predict_accept_length, throughput
from specdash.costmodel.acceptance import AcceptLength
from specdash.costmodel.domain import Setting
from specdash.costmodel.loadcosts import cost_params_at
from specdash.costmodel.priors import drafter_family
from specdash.costmodel.sources import AcceptLengthChoice, choose_accept_length, choose_baseline
from specdash.costmodel.uncertainty import prior_error_band, with_noise
from specdash.db import bulk
from specdash.db.bulk import insert_rows, select_in, update_rows
from specdash.db.models import BENCHMARK_SETTING, BUILTIN_SOURCES, Benchmark, Prediction
from specdash.db.refresh_context import Drafter, RefreshContext, SetPlan

# The cost model's columns of a benchmark, as refresh reads them.
BENCHMARK_COLUMNS = (
    Benchmark.id,
    Benchmark.checkpoint_id,
    Benchmark.deployment_id,
    *BENCHMARK_SETTING,
    Benchmark.decode_tps,
    Benchmark.accept_length,
    Benchmark.draft_hidden_size,
    Benchmark.input_tokens,
    Benchmark.output_tokens,
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
    "baseline_estimated",
    "extrapolated",
    "approximation",
    "error_band",
)


class PredictionValues(NamedTuple):
    """A prediction's stored numbers (columns of PREDICTION_VALUES), compared before rewriting."""

    parameter_set_id: int | None
    predicted_tps: float
    accept_length: float | None
    accept_length_source: str | None
    round_ms: float | None
    compute_ms: float | None
    comm_ms: float | None
    draft_ms: float | None
    overhead_ms: float | None
    baseline_tps: float | None
    baseline_estimated: bool | None
    extrapolated: bool | None
    approximation: str | None
    error_band: float | None


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
    values: tuple[Any, ...] | None


class Predicted(NamedTuple):
    """One prediction of a group, as its gaps are computed against it."""

    prediction_id: int
    values: PredictionValues
    result: Throughput | None  # None: an external prediction (its tok/s are known, not its round)
    source: str
    params: CostParams | None


class BenchmarkRow(NamedTuple):
    """A benchmark's BENCHMARK_COLUMNS, in order, as refresh reads them: a plain named tuple, whose
    fields read in C (a SQLAlchemy Row's by name cost ten times as much, a score of times a benchmark)."""

    id: int
    checkpoint_id: int
    deployment_id: int
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    decode_tps: float
    accept_length: float | None
    draft_hidden_size: int | None
    input_tokens: float | None = None
    output_tokens: float | None = None


Groups = dict[PredictionKey, list[BenchmarkRow]]
# Rows read back by column name, in one C-level call per row (tens of thousands of rows per refresh).
_KEY_COLUMNS = attrgetter(*(column.key for column in PREDICTION_KEY))


def prediction_key(bench: BenchmarkRow, steps: int) -> PredictionKey:
    """The key of a benchmark row's prediction (K already resolved)."""
    setting = Setting.of(bench.speculative_algorithm, steps, bench.topk, bench.num_draft_tokens)
    return PredictionKey(
        bench.checkpoint_id,
        bench.deployment_id,
        steps,
        setting.width,
        setting.verified_tokens,  # type: ignore[arg-type]  # K is resolved: never None
        bench.concurrency,
        bench.dataset or "",
    )


def _key_of(row: Row) -> PredictionKey:
    """The PredictionKey of a row selected with the PREDICTION_KEY columns."""
    return PredictionKey._make(_KEY_COLUMNS(row))


@dataclass
class PredictionCache:
    """What predicting a batch made, before it is written: per key its (source, values, result, params)."""

    computed: dict[PredictionKey, list[tuple[str, PredictionValues, Throughput, CostParams]]] = field(
        default_factory=dict
    )
    count: int = 0
    params: dict[tuple[Any, ...], CostParams] = field(default_factory=dict)  # per (set, baseline, ...)
    # tau depends on the checkpoint and setting, not the deployment: computed once for all deployments
    taus: dict[tuple[Any, ...], AcceptLength] = field(default_factory=dict)


def refresh_predictions(
    session: Session, groups: Groups, context: RefreshContext, checkpoint_ids: Sequence[int] | None
) -> tuple[dict[PredictionKey, list[Predicted]], int, int]:
    """Each group's predictions (written where changed), with how many were made and how many of the
    groups' benchmarks have none (no baseline, no accept length, no active set)."""
    existing = _stored(session, groups, checkpoint_ids)
    made = PredictionCache()
    for key, group in groups.items():
        made.computed[key] = predict_group(key, group, context, made)
    _write(session, made, existing, context.now)
    out, skipped = {}, 0
    for key, group in groups.items():
        stored = existing[key]
        predicted = [
            Predicted(stored[source].id, values, result, source, params)
            for source, values, result, params in made.computed[key]
        ]
        if len(stored) > len(predicted):
            predicted += [
                Predicted(row.id, row.values, None, source, None)  # type: ignore[arg-type]
                for source, row in stored.items()
                if source not in BUILTIN_SOURCES
            ]
        if predicted:
            out[key] = predicted
        else:
            skipped += len(group)
    return out, made.count, skipped


def _stored(
    session: Session, groups: Groups, checkpoint_ids: Sequence[int] | None
) -> dict[PredictionKey, dict[str, Stored]]:
    """key -> source -> (prediction id, its stored values)."""
    existing: dict[PredictionKey, dict[str, Stored]] = defaultdict(dict)
    columns = [Prediction.__table__.c[name] for name in PREDICTION_VALUES]
    query = select(Prediction.id, Prediction.source, *PREDICTION_KEY, *columns)
    values_at = 2 + len(PREDICTION_KEY)
    # A batch that holds its checkpoints whole reads their predictions; one that holds part of a drafter
    # split over batches reads its checkpoints' too, and keeps its own keys' (by-key selects, row-value
    # IN lists of a few hundred keys, cost more than the rows they spare, most on PostgreSQL).
    whole = checkpoint_ids is not None
    ids = checkpoint_ids if checkpoint_ids is not None else sorted({key.checkpoint_id for key in groups})
    # only at the groups' deployments and loads: a new baseline reaches one load of many checkpoints
    deployments, loads = {key.deployment_id for key in groups}, {key.concurrency for key in groups}
    if len(deployments) + len(loads) <= bulk.CHUNK // 2:
        query = query.where(
            Prediction.deployment_id.in_(sorted(deployments)), Prediction.concurrency.in_(sorted(loads))
        )
    for row in select_in(session, query, Prediction.checkpoint_id, ids):
        # a computed prediction's key and values as plain tuples, sliced in C: they hash and compare as
        # the named ones they are looked up by and compared with; an external one is read by name
        key = row[2:values_at]
        if not whole and key not in groups:
            continue
        source = row[1]
        values = row[values_at:] if source in BUILTIN_SOURCES else PredictionValues._make(row[values_at:])
        existing[key][source] = Stored(row[0], values)  # type: ignore[index]
    return existing


def predict_group(
    key: PredictionKey, group: list[BenchmarkRow], context: RefreshContext, made: PredictionCache
) -> list[tuple[str, PredictionValues, Throughput, CostParams]]:
    """The group's prediction under each active set of its deployment that has a baseline and an accept
    length to predict with."""
    drafter = context.drafters[key.checkpoint_id]
    family = drafter_family(drafter.speculative_algorithm, group[0].speculative_algorithm)
    # a drafter's training rates come first (choose_accept_length): then neither of these is read
    measured_taus = () if drafter.rates else [b.accept_length for b in group if b.accept_length]
    references = context.references
    history = references.get(max(b.id for b in group)) if references and not drafter.rates else None
    results = []
    for plan in context.plans.get(key.deployment_id, ()):
        trained = trained_accept_length(key, drafter, plan, made) if drafter.rates else None
        tau = choose_accept_length(trained, history, measured_taus)
        if tau is None:
            continue
        predicted = predict_under(plan, key, tau, family, context, made)
        if predicted is not None:
            results.append((plan.source, *predicted))
    return results


def predict_under(
    plan: SetPlan,
    key: PredictionKey,
    tau: AcceptLengthChoice,
    family: str,
    context: RefreshContext,
    made: PredictionCache,
) -> tuple[PredictionValues, Throughput, CostParams] | None:
    """The prediction of one point under one parameter set, with the accept length chosen for it: the
    stored predictions of benchmarks and the answers at points never measured (specdash/answers) both
    come from here. None without a baseline to predict against."""
    baseline = _baseline(key, plan, context)
    if baseline is None:
        return None
    baseline_tps, estimated = baseline
    drafter = context.drafters[key.checkpoint_id]
    if plan.load is not None:  # the round of batch and depth fitted to every load
        params = cost_params_at(
            plan.load, key.concurrency, key.steps, key.draft_tokens, key.topk, str(drafter.run_id)
        )
    else:
        params = _params(key, drafter, family, plan, baseline_tps, context, made)
    result = throughput(params, tau.accept_length, key.steps, key.draft_tokens, key.topk)
    round_ = result.round
    values = PredictionValues(
        parameter_set_id=plan.id,
        predicted_tps=result.tps,
        accept_length=tau.accept_length,
        accept_length_source=tau.source,
        round_ms=result.round_ms,
        compute_ms=round_.compute_ms,
        comm_ms=round_.comm_ms,
        draft_ms=round_.draft_ms,
        overhead_ms=round_.overhead_ms,
        baseline_tps=baseline_tps,
        baseline_estimated=estimated,
        extrapolated=tau.extrapolated,
        approximation=tau.approximation,
        error_band=with_noise(
            plan.band if plan.band is not None else prior_error_band(tau.source),
            context.noise.get(key.deployment_id),
        ),
    )
    made.count += 1
    return values, result, params


def _baseline(key: PredictionKey, plan: SetPlan, context: RefreshContext) -> tuple[float, bool] | None:
    """The no-speculation tok/s a prediction under this set compares with, and whether it is an estimate:
    a load model's own step at this batch (estimated when its fit had no run without speculation); else
    measured, interpolated or the profile's (costmodel.sources.choose_baseline); else estimated from the
    deployment's depth sweep (costmodel/estimated.py). None when there is none."""
    if plan.load is not None:
        fit = plan.costs.fit
        return 1000.0 / plan.load.base_step_ms(key.concurrency), bool(fit and fit.baseline_estimated)
    baselines, facts = context.baselines, context.facts[key.deployment_id]
    chosen = choose_baseline(
        baselines.lookup(key.deployment_id, key.concurrency, key.dataset),
        baselines.levels(key.deployment_id, key.dataset),
        key.concurrency,
        facts,
        plan.costs.comm_fraction or 0.0,
        plan.costs.baseline_tps,
    )
    if chosen:
        return chosen, False
    estimate = context.estimates.get(key.deployment_id)
    if estimate is None:
        return None
    return estimate.at(key.concurrency).baseline_tps, True


def trained_accept_length(
    key: PredictionKey, drafter: Drafter, plan: SetPlan, made: PredictionCache
) -> AcceptLength:
    """tau from the drafter's trained rates under the set's acc-to-acceptance factor (cached)."""
    acc_to_acceptance = plan.costs.acc_to_acceptance
    tau_key = (key.checkpoint_id, key.steps, key.topk, key.draft_tokens, acc_to_acceptance)
    tau = made.taus.get(tau_key)
    if tau is None:
        tau = made.taus[tau_key] = predict_accept_length(
            drafter.rates, key.steps, key.topk, key.draft_tokens, acc_to_acceptance
        )
    return tau


def _params(
    key: PredictionKey,
    drafter: Drafter,
    family: str,
    plan: SetPlan,
    baseline_tps: float,
    context: RefreshContext,
    made: PredictionCache,
) -> CostParams:
    """The set's costs for this group (cached: a set's costs differ by drafter and dataset only when its
    fit has per-drafter or per-dataset values)."""
    costs, facts = plan.costs, context.facts[key.deployment_id]
    # a calibrated set's drafting and overhead were fitted at its reference load
    reference_tps = context.baselines.at_reference(
        key.deployment_id, costs.fit, key.concurrency, key.dataset, facts, costs.comm_fraction or 0.0
    )
    params_key = (
        plan.id,
        baseline_tps,
        family,
        key.concurrency,
        key.draft_tokens,
        drafter.run_id if costs.by_drafter else None,
        key.dataset if costs.by_dataset else None,
        reference_tps,
    )
    params = made.params.get(params_key)
    if params is None:
        params = made.params[params_key] = costs.costs(
            baseline_tps,
            facts,
            family,
            key.concurrency,
            key.draft_tokens,
            drafter.run_id,
            key.dataset,
            reference_tps,
        )
    return params


def _write(
    session: Session,
    made: PredictionCache,
    existing: dict[PredictionKey, dict[str, Stored]],
    now: datetime,
) -> None:
    """Insert the new predictions and rewrite the changed ones; the new ids are read back into `existing`."""
    new_rows, changed_rows = [], []
    for key, results in made.computed.items():
        for source, values, _, _ in results:
            stored = existing[key].get(source)
            if stored is None:
                new_rows.append(
                    dict(
                        checkpoint_id=key.checkpoint_id,
                        deployment_id=key.deployment_id,
                        num_steps=key.steps,
                        topk=key.topk,
                        num_draft_tokens=key.draft_tokens,
                        concurrency=key.concurrency,
                        dataset=key.dataset,
                        source=source,
                        created_at=now,
                        **values._asdict(),
                    )
                )
            elif values != stored.values:
                # created_at says when these numbers were computed: unchanged ones keep theirs
                changed_rows.append(dict(id=stored.id, created_at=now, **values._asdict()))
    if new_rows:
        # the new rows' ids are those above the largest before the insert (the refresh holds the
        # store's write lock): read back by a range of the primary key, not by their keys
        before = session.connection().scalar(select(func.max(Prediction.id))) or 0
        insert_rows(session, Prediction, new_rows)
        query = select(Prediction.id, *PREDICTION_KEY, Prediction.source).where(
            Prediction.id > before, Prediction.source.in_(BUILTIN_SOURCES)
        )
        for row in session.connection().execute(query):
            existing[_key_of(row)].setdefault(row.source, Stored(row.id, None))
    update_rows(session, Prediction, changed_rows)
