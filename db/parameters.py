"""Versioned cost-parameter sets of a deployment (the theory profile and calibrated fits), read as the cost
model's CostSet, and the measured no-speculation baselines they are applied to; the deployments as a
refresh reads them."""

import statistics
from collections import defaultdict
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel.calibrated import CalibratedSet, CostSet
from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.priors import DeploymentFacts, TargetArchitecture, architecture_for
from specdash.db.models import Benchmark, Deployment, ParameterSet
from specdash.rows import ActiveSet, Baselines, DeploymentRow

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


def active_sets(session: Session, deployment_id: int, source: str) -> list[ParameterSet]:
    """The deployment's active parameter sets of this source (theory, calibrated)."""
    return list(
        session.scalars(
            select(ParameterSet).where(
                ParameterSet.deployment_id == deployment_id,
                ParameterSet.source == source,
                ParameterSet.is_active.is_(True),
            )
        )
    )


def latest_active_set(session: Session, deployment_id: int, source: str) -> ParameterSet | None:
    """The deployment's newest active parameter set of this source (theory, calibrated), if any."""
    return session.scalars(
        select(ParameterSet)
        .where(
            ParameterSet.deployment_id == deployment_id,
            ParameterSet.source == source,
            ParameterSet.is_active.is_(True),
        )
        .order_by(ParameterSet.version.desc())
    ).first()


def ensure_theory_set(session: Session, deployment: Deployment) -> ParameterSet:
    """The active theory set for the deployment's current profile; a changed profile adds a version."""
    sets = active_sets(session, deployment.id, PredictionSource.THEORY)
    for pset in sets:
        if _same_profile(pset, deployment):
            return pset
        pset.is_active = False
    pset = ParameterSet(
        deployment_id=deployment.id,
        version=next_version(session, deployment.id),
        source=PredictionSource.THEORY,
        acc_to_acceptance=1.0,
        draft_branch_ms=0.0,
        is_active=True,
        **{name: getattr(deployment, name) for name in PROFILE_FIELDS},
    )
    session.add(pset)
    session.flush()
    return pset


def ensure_theory_sets(session: Session) -> None:
    """Every deployment's current profile gets its active theory set (ensure_theory_set)."""
    for deployment in session.scalars(select(Deployment)):
        ensure_theory_set(session, deployment)


def read_deployments(session: Session) -> tuple[dict[int, DeploymentRow], dict[int, DeploymentFacts]]:
    """Every deployment (by id, in id order) with its profile's baseline and threshold, and what the
    priors know of it."""
    deployments = session.scalars(select(Deployment).order_by(Deployment.id)).all()
    return (
        {d.id: DeploymentRow(d.name, d.baseline_tps, d.gap_threshold) for d in deployments},
        {d.id: deployment_facts(d) for d in deployments},
    )


def read_active_sets(session: Session) -> list[ActiveSet]:
    """Every active parameter set, read as the cost model's CostSet."""
    return [
        ActiveSet(pset.id, pset.deployment_id, pset.source, pset.version, cost_set(pset))
        for pset in session.scalars(select(ParameterSet).where(ParameterSet.is_active.is_(True)))
    ]


def deployment_facts(deployment) -> DeploymentFacts:
    """What the priors know of a deployment (a Deployment or a row with its columns): GPU, TP size,
    interconnect, engine, and the target's architecture as stated, else looked up by the target model's
    name."""
    experts = getattr(deployment, "target_num_experts", None)
    active = getattr(deployment, "target_active_params_b", None)
    architecture: TargetArchitecture | None
    if experts or active:
        architecture = TargetArchitecture(
            getattr(deployment, "target_total_params_b", None),
            active,
            experts,
            getattr(deployment, "target_experts_per_token", None),
        )
    else:
        architecture = architecture_for(deployment.target_model)
    return DeploymentFacts(
        deployment.gpu,
        deployment.tp_size,
        deployment.interconnect,
        architecture,
        getattr(deployment, "engine", None),
    )


def cost_set(pset: ParameterSet) -> CostSet:
    """A stored parameter set as the cost model reads it: its stated costs and, when calibrated, its fit."""
    return CostSet(
        comm_fraction=pset.comm_fraction,
        draft_step_ms=pset.draft_step_ms,
        round_overhead_ms=pset.round_overhead_ms,
        verify_growth_compute=pset.verify_growth_compute,
        verify_growth_comm=pset.verify_growth_comm,
        draft_branch_ms=pset.draft_branch_ms,
        acc_to_acceptance=pset.acc_to_acceptance,
        baseline_tps=pset.baseline_tps,
        fit=CalibratedSet.from_json(pset.fit),
    )


def profile_costs(deployment: Deployment) -> CostSet:
    """A deployment's profile as it stands, as an unsaved theory set (reading it writes nothing)."""
    return CostSet(**{name: getattr(deployment, name) for name in PROFILE_FIELDS})


def load_baselines(
    session: Session, deployment_id: int | None = None, deployment_ids: Sequence[int] | None = None
) -> Baselines:
    """The baselines of one deployment, of `deployment_ids`, or (neither given) of every deployment."""
    query = select(
        Benchmark.deployment_id, Benchmark.concurrency, Benchmark.dataset, Benchmark.decode_tps
    ).where(Benchmark.speculative_algorithm.is_(None), Benchmark.superseded_by_id.is_(None))
    if deployment_id is not None:
        query = query.where(Benchmark.deployment_id == deployment_id)
    elif deployment_ids is not None:
        query = query.where(Benchmark.deployment_id.in_(list(deployment_ids)))
    by_dataset: dict[tuple[int, int, str], list[float]] = defaultdict(list)
    by_concurrency: dict[tuple[int, int], list[float]] = defaultdict(list)
    for deployment, concurrency, dataset, tps in session.execute(query):
        by_dataset[(deployment, concurrency, dataset or "")].append(tps)
        by_concurrency[(deployment, concurrency)].append(tps)
    return Baselines(
        by_dataset={key: statistics.median(v) for key, v in by_dataset.items()},
        by_concurrency={key: statistics.median(v) for key, v in by_concurrency.items()},
    )
