"""Which load model a deployment's predictions at any concurrency come from, decided over what the store
read: its active calibrated set's fit when that has one, else the priors scaled to its measured, stated or
estimated step; which deployments' baselines are estimated, and from a stored load fit or one made now."""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from specdash.costmodel.calibrated import CalibratedSet
from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.load_observations import (
    UNKNOWN_STEP_MS,
    BenchmarkLoad,
    DeploymentLoad,
    FitOutcome,
    StoredFit,
    baseline_observations,
    estimate_deployment,
)
from specdash.costmodel.loadmodel import prior_load_params, rescale_prior, step_ms_from_observations
from specdash.costmodel.priors import DeploymentFacts
from specdash.rows import ActiveSet, Baselines, SetPlan


@dataclass(frozen=True)
class FittedEstimates:
    estimates: dict[int, BaselineEstimate]  # deployment id -> its estimated no-speculation baselines
    refitted: tuple[int, ...] = ()  # the deployments whose load model was fitted now, not reused


def set_plan(active: ActiveSet, facts: DeploymentFacts) -> SetPlan:
    """How an active set predicts: its costs and error band, and the round of batch and depth its
    calibrated fit holds when that fit predicts by load."""
    fit = active.costs.fit
    by_load = fit is not None and fit.predicts_by_load()
    load = fit.load_params(facts.architecture) if fit and by_load else None
    return SetPlan(active.id, active.source, active.costs, active.costs.error_band(), load)


def needing_estimates(
    deployment_ids: Iterable[int], measured: Baselines, wanted: Sequence[int] | None
) -> list[int]:
    """The deployments (of those `wanted`; every one when None) measured at no load without speculation:
    their baselines can only be estimated."""
    return [d for d in deployment_ids if not measured.measured_loads(d) and (wanted is None or d in wanted)]


def estimate_deployments(
    keyed: Mapping[int, Sequence[BenchmarkLoad]],
    families: Mapping[int, Mapping[str, str]],
    facts: Mapping[int, DeploymentFacts],
    stored: Mapping[int, StoredFit],
) -> dict[int, FitOutcome]:
    """Each deployment's estimate (estimate_deployment: its stored fit while the data holds, else fitted
    now); deployments whose benchmarks cannot be fitted are left out."""
    outcomes = {}
    for deployment_id, rows in keyed.items():
        outcome = estimate_deployment(
            rows, facts[deployment_id], families.get(deployment_id, {}), stored.get(deployment_id)
        )
        if outcome is not None:
            outcomes[deployment_id] = outcome
    return outcomes


def fitted(outcomes: Mapping[int, FitOutcome]) -> FittedEstimates:
    """The estimates of these outcomes, and which were fitted now."""
    return FittedEstimates(
        {d: o.estimate for d, o in outcomes.items()}, tuple(d for d, o in outcomes.items() if o.refitted)
    )


def calibrated_load(
    fit: CalibratedSet | None, parameter_set_id: int, acc_to_acceptance: float | None, facts: DeploymentFacts
) -> DeploymentLoad | None:
    """The load model a calibrated set's fit holds (None: the set was fitted without one)."""
    params = fit.load_params(facts.architecture) if fit is not None else None
    if params is None or fit is None:
        return None
    return DeploymentLoad(
        params,
        PredictionSource.CALIBRATED,
        fit.baseline_estimated,
        parameter_set_id,
        acc_to_acceptance or 1.0,
        fit.predicts_by_load(),
    )


def measured_step_load(
    facts: DeploymentFacts, levels: Mapping[int, float], stated_tps: float, families: Mapping[str, str]
) -> DeploymentLoad | None:
    """The priors on the step read from the measured baselines (at every load, through the prior's
    shape), else from the profile's stated tok/s (None: neither)."""
    if not levels and not stated_tps:
        return None
    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(families))
    step = step_ms_from_observations(baseline_observations(levels), prior) if levels else 1000.0 / stated_tps
    return DeploymentLoad(rescale_prior(prior, step), PredictionSource.THEORY, False)


def estimated_load(
    facts: DeploymentFacts, families: Mapping[str, str], estimate: BaselineEstimate | None
) -> DeploymentLoad | None:
    """The priors on the step estimated from the speculative benchmarks (None: no estimate)."""
    if estimate is None:
        return None
    prior = prior_load_params(facts, UNKNOWN_STEP_MS, dict(families))
    return DeploymentLoad(
        rescale_prior(prior, estimate.params.step_ms), PredictionSource.THEORY, True, by_load=True
    )
