"""A deployment's load model read from the store and decided by answers/loadfits.py: what its predictions
and advice at any concurrency use."""

from sqlalchemy.orm import Session

from specdash.answers.estimates import deployment_estimates
from specdash.answers.loadfits import calibrated_load, estimated_load, measured_step_load
from specdash.costmodel.calibrated import CalibratedSet
from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.load_observations import DeploymentLoad
from specdash.db.loadmodels import drafter_families, speculative_benchmarks
from specdash.db.models import Deployment
from specdash.db.parameters import deployment_facts, latest_active_set, load_baselines


def deployment_load(session: Session, deployment_id: int) -> DeploymentLoad | None:
    """The deployment's load model: its active calibrated set's fit when that has one, else the priors
    (None when it has neither a step to scale them by nor benchmarks to estimate one from)."""
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        return None
    facts = deployment_facts(deployment)
    calibrated = latest_active_set(session, deployment_id, PredictionSource.CALIBRATED)
    if calibrated is not None:
        fitted = calibrated_load(
            CalibratedSet.from_json(calibrated.fit), calibrated.id, calibrated.acc_to_acceptance, facts
        )
        if fitted is not None:
            return fitted
    levels = load_baselines(session, deployment.id).measured_loads(deployment.id)
    stated = deployment.baseline_tps or 0.0
    if levels or stated:
        return measured_step_load(facts, levels, stated, drafter_families(session, deployment.id))
    keyed, families = speculative_benchmarks(session, [deployment.id])
    # the stored fit while the data holds, as the refresh's predictions use it
    fits = deployment_estimates(session, keyed, families, {deployment.id: facts}, keep=False)
    return estimated_load(facts, families.get(deployment.id, {}), fits.estimates.get(deployment.id))
