"""Which load model a deployment's predictions at any concurrency come from, decided over what the store
read: its active calibrated set's fit when that has one, else the priors scaled to its measured, stated or
estimated step."""

from collections.abc import Mapping

from specdash.costmodel.calibrated import CalibratedSet
from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.load_observations import UNKNOWN_STEP_MS, DeploymentLoad, baseline_observations
from specdash.costmodel.loadmodel import prior_load_params, rescale_prior, step_ms_from_observations
from specdash.costmodel.priors import DeploymentFacts


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
