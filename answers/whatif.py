"""The costs the What-if starts from for a deployment: its active calibrated set, else its profile with
the published priors, applied to its measured, carried or estimated baseline at the load asked."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.answers.estimates import estimated_baselines
from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.priors import DEFAULT_FAMILY, prior_comm_fraction
from specdash.db.models import Deployment, ParameterSet
from specdash.db.parameters import PROFILE_FIELDS as COST_FIELDS
from specdash.db.parameters import cost_set, deployment_facts, load_baselines, profile_costs
from specdash.db.profiles import ProfileError


def effective_profile(
    session: Session, deployment_id: int, draft_tokens: int = 4, concurrency: int = 1
) -> dict:
    """The costs the cost model uses for the deployment at `concurrency` and `draft_tokens` verified tokens,
    as the What-if starts from them: the active calibrated set when there is one, else the profile with the
    published priors for every cost it does not state (`source` says which)."""
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        raise ProfileError(f"deployment: no deployment with id {deployment_id}")
    sets = session.scalars(
        select(ParameterSet).where(
            ParameterSet.deployment_id == deployment_id, ParameterSet.is_active.is_(True)
        )
    ).all()
    calibrated = [s for s in sets if s.source == PredictionSource.CALIBRATED]
    latest = max(calibrated, key=lambda s: s.version) if calibrated else None
    # the profile as it stands (an unsaved theory set: reading writes nothing)
    costs = cost_set(latest) if latest is not None else profile_costs(deployment)
    facts = deployment_facts(deployment)
    baselines = load_baselines(session, deployment_id)
    comm = costs.comm_fraction
    if comm is None:
        comm = prior_comm_fraction(facts.tp_size, facts.interconnect)
    # measured at that load, else carried from the loads measured (SpecBundle measures batch 8 only)
    baseline = baselines.choose(
        deployment_id, concurrency, None, facts, comm, profile_tps=deployment.baseline_tps
    )
    estimated = baseline is None and deployment_id in (
        estimates := estimated_baselines(session, [deployment_id])
    )
    if estimated:  # no run without speculation: the depth sweep's estimate at this load
        baseline = estimates[deployment_id].at(float(concurrency)).baseline_tps
    baseline = baseline or 100.0
    # a calibrated set's drafting and overhead were fitted at its reference load
    reference_tps = baselines.at_reference(deployment_id, costs.fit, concurrency, None, facts, comm)
    params = costs.costs(
        baseline, facts, DEFAULT_FAMILY, concurrency, draft_tokens, reference_baseline_tps=reference_tps
    )
    stated = [name for name in COST_FIELDS[1:] if getattr(deployment, name) is not None]
    return {
        "baseline_tps": baseline,
        "comm_fraction": params.comm_fraction,
        "draft_step_ms": params.draft_step_ms,
        "round_overhead_ms": params.round_overhead_ms,
        "verify_growth_compute": params.verify_growth_compute,
        "verify_growth_comm": params.verify_growth_comm,
        # the calibrated fit's expected error; None: the prior's band applies (it depends on the acceptance)
        "error_band": costs.error_band(),
        "source": f"calibrated v{latest.version}"
        if latest is not None
        else ("profile" if len(stated) == len(COST_FIELDS) - 1 else "profile + published priors")
        + ("; baseline estimated from the depth sweep (no run without speculation)" if estimated else ""),
    }
