"""Versioned cost-parameter sets of a deployment (the theory profile and calibrated fits), and the
measured no-speculation baselines they are applied to."""

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel import CostParams
from specdash.db.models import Benchmark, Deployment, ParameterSet

if TYPE_CHECKING:
    from specdash.costmodel.calibration import FittedParams

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
        draft_branch_ms=0.0,
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
        draft_branch_ms=pset.draft_branch_ms or 0.0,
    )


def fitted_params(pset: ParameterSet) -> "FittedParams":
    """The set's values as calibration's free parameters (its starting point and prior)."""
    from specdash.costmodel.calibration import FittedParams

    return FittedParams(
        draft_step_ms=pset.draft_step_ms,
        draft_branch_ms=pset.draft_branch_ms or 0.0,
        round_overhead_ms=pset.round_overhead_ms,
        verify_growth=cost_params(pset, 1.0).verify_growth,
        acc_to_acceptance=pset.acc_to_acceptance,
    )


def fit_error_band(fit: dict | None) -> float | None:
    """The error band a calibrated set's fit recorded (None for a theory set). Sets saved before bands
    existed recorded their held-out p90 and size: the band is rebuilt from those."""
    if not fit:
        return None
    if fit.get("error_band") is not None:
        return float(fit["error_band"])
    p90, n = fit.get("loo_p90_abs_rel_error"), fit.get("n_benchmarks")
    if p90 is None or not n:
        return None
    from specdash.costmodel.uncertainty import error_band

    return error_band([p90] * int(n))


@dataclass(frozen=True)
class Baselines:
    """Median measured no-speculation tok/s per (deployment, concurrency, dataset) and per
    (deployment, concurrency); the dataset's own baseline wins, since output lengths differ by dataset."""

    by_dataset: dict[tuple[int, int, str], float]
    by_concurrency: dict[tuple[int, int], float]

    def lookup(self, deployment_id: int, concurrency: int, dataset: str | None) -> float | None:
        own = self.by_dataset.get((deployment_id, concurrency, dataset or ""))
        return own if own is not None else self.by_concurrency.get((deployment_id, concurrency))


def load_baselines(session: Session, deployment_id: int | None = None) -> Baselines:
    query = select(Benchmark.deployment_id, Benchmark.concurrency, Benchmark.dataset, Benchmark.decode_tps).where(
        Benchmark.speculative_algorithm.is_(None), Benchmark.superseded_by_id.is_(None)
    )
    if deployment_id is not None:
        query = query.where(Benchmark.deployment_id == deployment_id)
    by_dataset: dict[tuple[int, int, str], list[float]] = defaultdict(list)
    by_concurrency: dict[tuple[int, int], list[float]] = defaultdict(list)
    for deployment, concurrency, dataset, tps in session.execute(query):
        by_dataset[(deployment, concurrency, dataset or "")].append(tps)
        by_concurrency[(deployment, concurrency)].append(tps)
    return Baselines(
        by_dataset={key: statistics.median(v) for key, v in by_dataset.items()},
        by_concurrency={key: statistics.median(v) for key, v in by_concurrency.items()},
    )
