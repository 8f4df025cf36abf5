"""Versioned cost-parameter sets of a deployment: the theory profile and calibrated fits."""

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel import CostParams
from specdash.db.models import Deployment, ParameterSet

PROFILE_FIELDS = (
    "baseline_tps",
    "comm_fraction",
    "draft_step_ms",
    "round_overhead_ms",
    "verify_growth_compute",
    "verify_growth_comm",
)


def _same_profile(pset: ParameterSet, deployment: Deployment) -> bool:
    return all(getattr(pset, name) == getattr(deployment, name) for name in PROFILE_FIELDS)


def next_version(session: Session, deployment_id: int) -> int:
    latest = session.scalar(
        select(func.max(ParameterSet.version)).where(ParameterSet.deployment_id == deployment_id)
    )
    return (latest or 0) + 1


def ensure_theory_set(session: Session, deployment: Deployment) -> ParameterSet:
    """The active theory set for the deployment's current profile; a changed profile adds a version."""
    sets = session.scalars(
        select(ParameterSet).where(
            ParameterSet.deployment_id == deployment.id,
            ParameterSet.source == "theory",
            ParameterSet.is_active.is_(True),
        )
    ).all()
    for pset in sets:
        if _same_profile(pset, deployment):
            return pset
        pset.is_active = False
    pset = ParameterSet(
        deployment_id=deployment.id,
        version=next_version(session, deployment.id),
        source="theory",
        acc_to_acceptance=1.0,
        is_active=True,
        **{name: getattr(deployment, name) for name in PROFILE_FIELDS},
    )
    session.add(pset)
    session.flush()
    return pset


def cost_params(pset: ParameterSet, baseline_tps: float) -> CostParams:
    return CostParams(
        baseline_tps=baseline_tps,
        comm_fraction=pset.comm_fraction,
        draft_step_ms=pset.draft_step_ms,
        round_overhead_ms=pset.round_overhead_ms,
        verify_growth_compute=pset.verify_growth_compute,
        verify_growth_comm=pset.verify_growth_comm,
    )
