"""Refreshing depth advice: each run's curve and target deployments read from the store, the advice at
each load and what becomes of each advisory decided by answers/advice.py, and the changes written."""

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from specdash.answers.advice import (
    AdviceTarget,
    AdvisorySummary,
    AdvisoryWrite,
    StoredAdvisory,
    advices_by_baseline,
    advices_by_load,
    decide,
    load_label,
    run_target_model,
    serves,
    summarize,
)
from specdash.answers.deployment_load import deployment_load
from specdash.db.acceptance import last_accuracies, latest_checkpoint_rates
from specdash.db.advisories import (
    AdvisoryChangeError,
    deployments_by_name,
    depth_advisories,
    get_min_gain,
    named_deployments,
    parameter_set,
    raise_advisory,
    runs_to_advise,
    set_min_gain,
    update_advisory,
)
from specdash.db.live_models import Advisory
from specdash.db.loadmodels import served_loads
from specdash.db.models import Deployment, Run
from specdash.db.parameters import Baselines, cost_set, deployment_facts, load_baselines

if TYPE_CHECKING:  # numpy (the load model's fit) only where a run is advised
    from specdash.costmodel.advisor import DepthAdvice

# what a stored advisory keeps of the advice, compared with the advice now
ADVICE_FIELDS = (
    "trained_depth",
    "best_depth",
    "gain",
    "trained_tps",
    "best_tps",
    "suggested_ttt",
    "time_factor",
    "curve_source",
    "curve",
    "parameter_set_id",
    "message",
)


def refresh_advisories(session: Session, run_ids: list[int] | None = None) -> AdvisorySummary:
    """Recompute the depth advice of the given runs (all when None) in the caller's transaction."""
    session.flush()
    if run_ids is not None and not run_ids:
        return AdvisorySummary()
    runs = runs_to_advise(session, run_ids)
    summary = AdvisorySummary(runs=len(runs))
    if not runs:
        return summary
    from specdash.costmodel.advisor import CURVE_MIN_STEPS, choose_curve

    min_gain, baselines = get_min_gain(session), load_baselines(session)
    existing = depth_advisories(session, [r.id for r in runs])
    curves = last_accuracies(session, [r.id for r in runs])
    for run in runs:
        rates, logged = curves.get(run.id, ([], None))
        if not rates:
            rates = latest_checkpoint_rates(session, run.id)
            logged = CURVE_MIN_STEPS if rates else None  # a saved checkpoint's acceptance is a settled curve
        curve, source = choose_curve(rates, logged, run.speculative_algorithm)
        for deployment in target_deployments(session, run):
            for target, advice in _advice_on(session, baselines, min_gain, run, deployment, curve, source):
                row = existing.get((run.id, deployment.id, target.concurrency))
                stored = _stored(row) if row is not None else None
                write = decide(target, advice, stored)
                if write is not None:
                    _write(session, summary, write)
    session.flush()
    return summary


def target_deployments(session: Session, run: Run) -> list[Deployment]:
    """The deployments a run is for: those the user named, else those serving the run's target model."""
    named = named_deployments(session, run.id)
    target = run_target_model(run.target_model, run.config)
    if named or target is None:
        return named
    return [d for d in deployments_by_name(session) if serves(d.target_model, target)]


def _stored(row: Advisory) -> StoredAdvisory:
    return StoredAdvisory(row.id, row.status, row.active, {k: getattr(row, k) for k in ADVICE_FIELDS})


def _write(session: Session, summary: AdvisorySummary, write: AdvisoryWrite) -> None:
    """Store one change the advice decided and count it."""
    summarize(summary, write)
    target = write.target
    if write.advisory_id is None:
        assert write.values is not None  # a new advisory holds advice
        advisory_id = raise_advisory(
            session, target.run_id, target.deployment_id, target.concurrency, write.values
        )
    else:
        advisory_id = write.advisory_id
        update_advisory(session, advisory_id, write.values, write.active, write.touched, write.event)
    if write.new:
        summary.new.append(advisory_id)


def _advice_on(
    session: Session,
    baselines: Baselines,
    min_gain: float,
    run: Run,
    deployment: Deployment,
    curve: tuple[float, ...],
    source: str,
) -> list[tuple[AdviceTarget, "DepthAdvice"]]:
    """The run's advice on one deployment at each load it serves: under its load model (fitted at several
    loads, or on estimated baselines) the schedule's depth at every benchmarked load; else at every load
    it was measured at without speculation (else batch 1)."""
    trained_depth = run.ttt_length
    if trained_depth is None:  # runs_to_advise selects only runs with a trained depth
        return []
    pset = parameter_set(session, deployment)
    load = deployment_load(session, deployment.id)
    if load is not None and load.by_load:
        loads = served_loads(session, deployment.id)
        advices = advices_by_load(load, loads, curve, trained_depth, str(run.id), min_gain)
        set_id = load.parameter_set_id or pset.id
    else:
        costs, facts = cost_set(pset), deployment_facts(deployment)
        advices = advices_by_baseline(
            costs,
            pset.baseline_tps or deployment.baseline_tps,
            baselines.measured_loads(deployment.id),
            lambda c: baselines.at_reference(deployment.id, costs.fit, c, None, facts),
            facts,
            curve,
            trained_depth,
            min_gain,
        )
        set_id = pset.id
    return [
        (
            AdviceTarget(
                run.id,
                deployment.id,
                concurrency,
                load_label(deployment.name, concurrency),
                curve,
                source,
                set_id,
                run.speculative_algorithm,
            ),
            advice,
        )
        for concurrency, advice in advices
    ]


def save_advice_settings(session: Session, min_gain: float) -> AdvisorySummary:
    """A new minimum gain, and every run's advice recomputed with it."""
    try:
        set_min_gain(session, min_gain)
    except ValueError as exc:
        raise AdvisoryChangeError(str(exc)) from None
    return refresh_advisories(session)
