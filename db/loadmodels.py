"""Each deployment's round as a function of batch and depth (costmodel/loadmodel.py) as the store knows it:
the observations its benchmarks make, the no-speculation baselines estimated for deployments measured only
with speculation, and the model predictions at any concurrency use (the calibrated set's fit, else the
priors on the measured, stated or estimated step)."""

import hashlib
import json
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.calibrated import CalibratedSet
from specdash.costmodel.domain import PredictionSource, Setting
from specdash.costmodel.estimated import BaselineEstimate, estimate_baselines
from specdash.costmodel.loadmodel import (
    LoadObservation,
    LoadParams,
    prior_load_params,
    rescale_prior,
    step_ms_from_observations,
)
from specdash.costmodel.observations import CalibrationObservation, NotEnoughObservations
from specdash.costmodel.priors import DeploymentFacts, drafter_family
from specdash.costmodel.throughput import verified_tokens
from specdash.db.acceptance import checkpoint_rates
from specdash.db.load_fit_models import LoadFit
from specdash.db.models import Benchmark, Checkpoint, Deployment, ParameterSet, Run, utcnow
from specdash.db.parameters import deployment_facts, load_baselines

# what the priors assume for T1 when nothing measured or stated one (only its shape matters to a fit)
UNKNOWN_STEP_MS = 10.0
# A deployment's stored load fit (table load_fit) is made again when its loads, settings, drafters or
# what the priors know of it change, or when more than this share of the benchmarks it rests on are new
# (or gone); else every refresh reuses it. A small file changes the medians it was fitted to by little.
REFIT_SHARE = 0.1
# part of every fit's key: a change to the fit or to what it stores makes every stored fit again
FIT_VERSION = 1


@dataclass(frozen=True)
class DeploymentLoad:
    """The load model a deployment's predictions at any concurrency come from, and what it rests on."""

    params: LoadParams
    source: str  # calibrated | theory
    baseline_estimated: bool  # no run without speculation: the step at K = 0 is an estimate
    parameter_set_id: int | None = None
    acc_to_acceptance: float = 1.0  # the set's factor on training rates: the fit's taus used it
    # whether the deployment's own predictions come from it (fitted at several loads, or on estimated
    # baselines); else the batch-1 model predicts at its measured loads and this one serves the rest
    by_load: bool = False


def _median_observations(rows: Iterable[tuple[tuple, float, float]]) -> list[LoadObservation]:
    """One observation per (drafter, setting, load): the median tok/s and tau of its benchmarks, so that a
    deployment of thousands of benchmarks is fitted as fast as one of a sweep's dozens."""
    grouped: dict[tuple, list[tuple[float, float]]] = defaultdict(list)
    for key, tps, tau in rows:
        grouped[key].append((tps, tau))
    out = []
    for (drafter, steps, topk, tokens, concurrency), values in grouped.items():
        out.append(
            LoadObservation(
                concurrency=float(max(concurrency, 1)),
                steps=steps,
                measured_tps=statistics.median(v[0] for v in values),
                accept_length=statistics.median(v[1] for v in values),
                topk=topk,
                draft_tokens=tokens if steps else None,
                drafter=drafter,
                label=f"{drafter or 'baseline'} K={steps} B={concurrency}",
            )
        )
    return out


def _setting(k: int | None, topk: int | None, n: int | None) -> tuple[int, int, int] | None:
    """(draft steps, top-k, verified tokens) of a benchmark's stated setting; None without a depth."""
    setting = Setting(None, k, topk, n)
    steps = setting.depth
    return (steps, setting.width, verified_tokens(steps, setting.width, n)) if steps else None


def _observed_tau(
    tau: float | None, trained: Sequence[float] | None, setting: tuple[int, int, int]
) -> float | None:
    """The accept length a load observation takes: the measured one, else chained from the checkpoint's
    training rates; None when neither gives one of at least 1."""
    if not tau and trained:
        tau = predict_accept_length(trained, *setting).accept_length
    return tau if tau and tau >= 1 else None


Keyed = dict[int, list[tuple[tuple, float, float]]]


def speculative_observations(
    session: Session, deployment_ids: Sequence[int] | None = None
) -> tuple[dict[int, list[LoadObservation]], dict[int, dict[str, str]]]:
    """Per deployment, its speculative benchmarks with an accept length (measured, else the drafter's
    training rates chained) as load observations, and each drafter's (run id's) family."""
    keyed, families = _speculative_benchmarks(session, deployment_ids)
    return {d: _median_observations(v) for d, v in keyed.items()}, families


def _speculative_benchmarks(
    session: Session, deployment_ids: Sequence[int] | None
) -> tuple[Keyed, dict[int, dict[str, str]]]:
    """speculative_observations' benchmarks before their medians: per deployment, one ((drafter, steps,
    topk, verified tokens, load), tok/s, tau) per benchmark."""
    query = (
        select(
            Benchmark.deployment_id,
            Benchmark.checkpoint_id,
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.decode_tps,
            Benchmark.accept_length,
            Run.id.label("run_id"),
            Run.speculative_algorithm.label("drafter_algorithm"),
        )
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Run, Checkpoint.run_id == Run.id)
        .where(Benchmark.speculative_algorithm.is_not(None), Benchmark.superseded_by_id.is_(None))
    )
    if deployment_ids is not None:
        query = query.where(Benchmark.deployment_id.in_(deployment_ids))
    # plain tuples, each setting and drafter worked out once: a deployment holds 100,000 benchmarks at the
    # bench's scale 10, and attribute access and these calls per row cost more than the query
    rows = [tuple(row) for row in session.execute(query)]
    untrained = sorted({row[1] for row in rows if row[1] and not row[8]})
    rates = checkpoint_rates(session, untrained) if untrained else {}
    settings: dict[tuple, tuple[int, int, int] | None] = {}
    keyed: Keyed = defaultdict(list)
    families: dict[int, dict[str, str]] = defaultdict(dict)
    for (
        deployment_id,
        checkpoint_id,
        algorithm,
        k,
        topk,
        n,
        concurrency,
        tps,
        tau,
        run_id,
        drafter_algorithm,
    ) in rows:
        if (k, topk, n) not in settings:
            settings[(k, topk, n)] = _setting(k, topk, n)
        setting = settings[(k, topk, n)]
        if setting is None or not tps or tps <= 0:
            continue
        tau = _observed_tau(tau, rates.get(checkpoint_id) if checkpoint_id and not tau else None, setting)
        if tau is None:
            continue
        drafter = str(run_id or "")
        families[deployment_id][drafter] = drafter_family(drafter_algorithm, algorithm)
        keyed[deployment_id].append(((drafter, *setting, concurrency), tps, tau))
    return dict(keyed), dict(families)


def drafter_families(session: Session, deployment_id: int) -> dict[str, str]:
    """Each drafter's (run id's) family on the deployment, for the same benchmarks speculative_observations
    keeps (a depth, tok/s, an accept length measured or chained from the training rates), read as one row
    per drafter, setting and kind of tau rather than one per benchmark: a prior on a measured step needs the
    families, not the 100,000 observations. The latest benchmark's algorithm decides a drafter's family."""
    tau = Benchmark.accept_length
    # a group's taus are all >= 1, all other non-zero values, or all unmeasured (NULL or 0)
    tau_kind = case((tau >= 1, 1), (func.coalesce(tau, 0) != 0, 0))
    rates_from = case((tau_kind.is_(None), Benchmark.checkpoint_id))
    keys = (
        Run.id,
        Run.speculative_algorithm,
        Benchmark.speculative_algorithm,
        Benchmark.num_steps,
        Benchmark.topk,
        Benchmark.num_draft_tokens,
        tau_kind,
        rates_from,
    )
    query = (
        select(*keys, func.max(tau), func.max(Benchmark.id).label("latest"))
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Run, Checkpoint.run_id == Run.id)
        .where(
            Benchmark.deployment_id == deployment_id,
            Benchmark.speculative_algorithm.is_not(None),
            Benchmark.superseded_by_id.is_(None),
            Benchmark.decode_tps > 0,
        )
        .group_by(*keys)
        .order_by("latest")
    )
    groups = session.execute(query).all()
    untrained = sorted({row[7] for row in groups if row[7]})
    rates = checkpoint_rates(session, untrained) if untrained else {}
    families: dict[str, str] = {}
    for run_id, drafter_algorithm, algorithm, k, topk, n, _, checkpoint_id, measured, _ in groups:
        setting = _setting(k, topk, n)
        trained = rates.get(checkpoint_id) if checkpoint_id else None
        if setting is None or _observed_tau(measured, trained, setting) is None:
            continue
        families[str(run_id or "")] = drafter_family(drafter_algorithm, algorithm)
    return families


def baseline_observations(levels: Mapping[int, float]) -> list[LoadObservation]:
    """Measured no-speculation load levels {concurrency: tok/s} as rounds of depth 0."""
    return [
        LoadObservation(float(max(c, 1)), 0, tps, label=f"baseline B={c}")
        for c, tps in sorted(levels.items())
    ]


def estimate_for(
    observations: Sequence[LoadObservation], facts: DeploymentFacts, families: Mapping[str, str]
) -> BaselineEstimate | None:
    """The estimated baselines of a deployment with only these speculative observations (None when they
    cannot be fitted)."""
    if not observations:
        return None
    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(families))
    try:
        return estimate_baselines(observations, prior)
    except (NotEnoughObservations, ValueError):
        return None


@dataclass(frozen=True)
class FittedEstimates:
    estimates: dict[int, BaselineEstimate]  # deployment id -> its estimated no-speculation baselines
    refitted: tuple[int, ...] = ()  # the deployments whose load model was fitted now, not reused


def fit_key(
    observations: Sequence[LoadObservation], facts: DeploymentFacts, families: Mapping[str, str]
) -> str:
    """What a stored fit must share with the data now to be reused, but for how many benchmarks there are:
    the loads, settings and drafters (with their families) of the observations and what the priors know of
    the deployment."""
    payload = [
        FIT_VERSION,
        sorted({o.concurrency for o in observations}),
        sorted({(o.steps, o.topk, o.draft_tokens or 0) for o in observations}),
        sorted({o.drafter for o in observations}),
        sorted(families.items()),
        repr(facts),
    ]
    return hashlib.sha256(json.dumps(payload).encode()).hexdigest()


def refit_needed(stored: LoadFit | None, key: str, benchmarks: int) -> bool:
    """Whether a deployment's load model must be fitted again: nothing stored, its data changed in shape,
    or more than REFIT_SHARE of its benchmarks are new or gone since the stored fit."""
    if stored is None or stored.data_key != key:
        return True
    return abs(benchmarks - stored.benchmarks) > REFIT_SHARE * stored.benchmarks


def _estimates(
    session: Session,
    keyed: Keyed,
    families: Mapping[int, Mapping[str, str]],
    facts: Mapping[int, DeploymentFacts],
    keep: bool,
) -> FittedEstimates:
    """Each deployment's estimate: its stored fit while refit_needed() says no, else fitted now (and
    stored when `keep`; a reader's session writes nothing)."""
    stored = {
        f.deployment_id: f
        for f in session.scalars(select(LoadFit).where(LoadFit.deployment_id.in_(list(keyed))))
    }
    out: dict[int, BaselineEstimate] = {}
    refitted: list[int] = []
    for deployment_id, rows in keyed.items():
        observations = _median_observations(rows)
        drafters = families.get(deployment_id, {})
        key = fit_key(observations, facts[deployment_id], drafters)
        kept = stored.get(deployment_id)
        if not refit_needed(kept, key, len(rows)):
            assert kept is not None  # refit_needed says so
            out[deployment_id] = BaselineEstimate.from_json(kept.estimate, facts[deployment_id].architecture)
            continue
        estimate = estimate_for(observations, facts[deployment_id], drafters)
        if estimate is None:
            continue
        out[deployment_id] = estimate
        refitted.append(deployment_id)
        if not keep:
            continue
        if kept is None:
            kept = LoadFit(deployment_id=deployment_id)
            session.add(kept)
        kept.data_key, kept.benchmarks = key, len(rows)
        kept.estimate, kept.fitted_at = estimate.to_json(), utcnow()
    return FittedEstimates(out, tuple(refitted))


def fitted_estimates(
    session: Session, deployment_ids: Sequence[int] | None = None, keep: bool = False
) -> FittedEstimates:
    """The estimated no-speculation baselines of every deployment (of those given) with speculative
    benchmarks and no benchmark without speculation, from its stored load fit unless its data changed
    materially since (refit_needed); fits made now are stored when `keep` and named in `refitted`."""
    measured = load_baselines(session)
    without = [
        d.id
        for d in session.scalars(select(Deployment).order_by(Deployment.id))
        if not measured.measured_loads(d.id) and (deployment_ids is None or d.id in deployment_ids)
    ]
    if not without:
        return FittedEstimates({})
    keyed, families = _speculative_benchmarks(session, without)
    deployments = session.scalars(select(Deployment).where(Deployment.id.in_(without)))
    facts = {d.id: deployment_facts(d) for d in deployments}
    return _estimates(session, keyed, families, facts, keep)


def estimated_baselines(
    session: Session, deployment_ids: Sequence[int] | None = None
) -> dict[int, BaselineEstimate]:
    """Deployment id -> its estimated no-speculation baselines, for every deployment (of those given)
    with speculative benchmarks and no benchmark without speculation (fitted_estimates; stores nothing)."""
    return fitted_estimates(session, deployment_ids).estimates


def _prior_model(session: Session, deployment: Deployment, facts: DeploymentFacts) -> DeploymentLoad | None:
    """The priors' load model on the deployment's step: read from its measured baselines (at every load,
    through the prior's shape), else its profile's, else estimated from its speculative benchmarks."""
    levels = load_baselines(session, deployment.id).measured_loads(deployment.id)
    stated = deployment.baseline_tps or 0.0
    if levels or stated:
        prior = prior_load_params(facts, UNKNOWN_STEP_MS, drafter_families(session, deployment.id))
        step = step_ms_from_observations(baseline_observations(levels), prior) if levels else 1000.0 / stated
        return DeploymentLoad(rescale_prior(prior, step), PredictionSource.THEORY, False)
    keyed, families = _speculative_benchmarks(session, [deployment.id])
    drafters = families.get(deployment.id, {})
    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(drafters))
    # the stored fit while the data holds, as the refresh's predictions use it
    estimate = _estimates(session, keyed, families, {deployment.id: facts}, False).estimates.get(
        deployment.id
    )
    if estimate is None:
        return None
    return DeploymentLoad(
        rescale_prior(prior, estimate.params.step_ms), PredictionSource.THEORY, True, by_load=True
    )


def fitted_observations(
    observations: Sequence[CalibrationObservation], concurrencies: Sequence[int], acc_to_acceptance: float
) -> list[LoadObservation]:
    """Calibration's observations (at these loads) as the load fit sees them: tau measured, else from the
    training rates under the fitted acc-to-acceptance factor."""
    out = []
    for o, concurrency in zip(observations, concurrencies, strict=True):
        tau = o.measured_accept_length
        if not tau and o.training_rates:
            tau = predict_accept_length(
                o.training_rates, o.steps, o.topk, o.draft_tokens, acc_to_acceptance
            ).accept_length
        if not tau:
            continue
        out.append(
            LoadObservation(
                float(max(concurrency, 1)),
                o.steps,
                o.measured_tps,
                tau,
                o.topk,
                o.draft_tokens,
                o.drafter,
                o.label,
            )
        )
    return out


def fit_deployment_load(
    observations: Sequence[LoadObservation], facts: DeploymentFacts, families: Mapping[str, str]
) -> LoadParams | None:
    """The load model fitted to a deployment's trusted observations at every load (None: nothing to fit)."""
    if not any(o.speculative for o in observations):
        return None
    from specdash.costmodel.loadfit import fit_load_model  # numpy: only where there is a fit to make

    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(families))
    try:
        return fit_load_model(observations, prior).params
    except NotEnoughObservations:
        return None


def deployment_load(session: Session, deployment_id: int) -> DeploymentLoad | None:
    """The deployment's load model: its active calibrated set's fit when that has one, else the priors
    (None when it has neither a step to scale them by nor benchmarks to estimate one from)."""
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        return None
    facts = deployment_facts(deployment)
    calibrated = session.scalars(
        select(ParameterSet)
        .where(
            ParameterSet.deployment_id == deployment_id,
            ParameterSet.source == PredictionSource.CALIBRATED,
            ParameterSet.is_active.is_(True),
        )
        .order_by(ParameterSet.version.desc())
    ).first()
    fit = CalibratedSet.from_json(calibrated.fit) if calibrated is not None else None
    params = fit.load_params(facts.architecture) if fit is not None else None
    if params is not None and calibrated is not None and fit is not None:
        return DeploymentLoad(
            params,
            PredictionSource.CALIBRATED,
            fit.baseline_estimated,
            calibrated.id,
            calibrated.acc_to_acceptance or 1.0,
            fit.predicts_by_load(),
        )
    return _prior_model(session, deployment, facts)


def served_loads(session: Session, deployment_id: int) -> list[int]:
    """The loads (concurrencies) a deployment was benchmarked at, with or without speculation."""
    levels = session.scalars(
        select(Benchmark.concurrency).where(Benchmark.deployment_id == deployment_id).distinct()
    ).all()
    return sorted({int(c) for c in levels if c})
