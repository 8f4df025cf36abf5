"""Versioned cost-parameter sets of a deployment (the theory profile and calibrated fits), and the
measured no-speculation baselines they are applied to."""

import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel import CostParams
from specdash.costmodel.load import baseline_at_load
from specdash.costmodel.priors import (
    DEFAULT_FAMILY,
    DeploymentFacts,
    TargetArchitecture,
    architecture_for,
    growth_shape,
    resolve_costs,
)
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


def ensure_theory_set(session: Session, deployment: Deployment) -> ParameterSet:
    """The active theory set for the deployment's current profile; a changed profile adds a version."""
    sets = active_sets(session, deployment.id, "theory")
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


def deployment_facts(deployment) -> DeploymentFacts:
    """What the priors know of a deployment (a Deployment or a row with its columns): GPU, TP size,
    interconnect, engine, and the target's architecture as stated, else looked up by the target model's
    name."""
    experts = getattr(deployment, "target_num_experts", None)
    active = getattr(deployment, "target_active_params_b", None)
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


def cost_params(
    pset: ParameterSet,
    baseline_tps: float,
    facts: DeploymentFacts | None = None,
    family: str = DEFAULT_FAMILY,
    concurrency: int = 1,
    draft_tokens: int = 4,
    drafter: str | None = None,
    dataset: str | None = None,
    reference_baseline_tps: float | None = None,
) -> CostParams:
    """The set's costs for one drafter (of `family`) at one load and setting: stated values, the priors for
    the ones it leaves unstated; a calibrated set's own draft cost for the drafter when it fitted one, its
    drafting and overhead carried from the fit's reference load by the step's growth (given the baseline
    at that load, `reference_baseline_tps`), its verify growth carried from the reference load by the
    architecture's shape, and its factor on the dataset's rounds when it fitted one."""
    facts = facts or DeploymentFacts()
    stated = {name: getattr(pset, name) for name in PROFILE_FIELDS[1:]}
    stated["draft_branch_ms"] = pset.draft_branch_ms or 0.0
    fit = pset.fit or {}
    if drafter is not None and str(drafter) in (fit.get("draft_step_ms_by_drafter") or {}):
        stated["draft_step_ms"] = fit["draft_step_ms_by_drafter"][str(drafter)]
    if reference_baseline_tps and fit.get("reference_concurrency") is not None:
        # drafting and bookkeeping fitted at the reference load grow with the step as the load does
        load_scale = reference_baseline_tps / baseline_tps
        for name in ("draft_step_ms", "round_overhead_ms", "draft_branch_ms"):
            if stated.get(name) is not None:
                stated[name] *= load_scale
    if fit.get("growth_shape") == "architecture" and pset.verify_growth_compute is not None:
        shape = growth_shape(facts, concurrency, draft_tokens)
        stated["verify_growth_compute"] = pset.verify_growth_compute * shape
        stated["verify_growth_comm"] = (pset.verify_growth_comm or 0.0) * shape
    params = resolve_costs(stated, facts, baseline_tps, family, concurrency, draft_tokens)
    scale = (fit.get("round_scale_by_dataset") or {}).get(dataset or "")
    if scale and scale != 1.0:
        # the fit's factor on this dataset's whole round: every part of it scales
        params = CostParams(
            baseline_tps=params.baseline_tps / scale,
            comm_fraction=params.comm_fraction,
            draft_step_ms=params.draft_step_ms * scale,
            round_overhead_ms=params.round_overhead_ms * scale,
            verify_growth_compute=params.verify_growth_compute,
            verify_growth_comm=params.verify_growth_comm,
            draft_branch_ms=params.draft_branch_ms * scale,
        )
    return params


def fitted_params(pset: ParameterSet) -> "FittedParams":
    """The set's values as calibration's free parameters (its starting point and prior)."""
    from specdash.costmodel.calibration import FittedParams

    return FittedParams(
        draft_step_ms=pset.draft_step_ms or 0.0,
        draft_branch_ms=pset.draft_branch_ms or 0.0,
        round_overhead_ms=pset.round_overhead_ms or 0.0,
        verify_growth=(pset.verify_growth_compute or 0.0) * (1 - (pset.comm_fraction or 0.0))
        + (pset.verify_growth_comm or 0.0) * (pset.comm_fraction or 0.0),
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

    def at_load(
        self,
        deployment_id: int,
        concurrency: int,
        dataset: str | None,
        facts: DeploymentFacts,
        comm_fraction: float = 0.0,
        extrapolate: bool = True,
    ) -> float | None:
        """The measured baseline at this load, else one interpolated between (or, with `extrapolate`,
        extrapolated from) the deployment's measured load levels: the dataset's own levels first, then all
        of the deployment's."""
        measured = self.lookup(deployment_id, concurrency, dataset)
        if measured is not None:
            return measured
        for levels in (
            {
                c: tps
                for (d, c, ds), tps in self.by_dataset.items()
                if d == deployment_id and ds == (dataset or "")
            },
            {c: tps for (d, c), tps in self.by_concurrency.items() if d == deployment_id},
        ):
            found = baseline_at_load(levels, concurrency, facts, comm_fraction)
            if found is not None and (extrapolate or found.rule != "extrapolated"):
                return found.baseline_tps
        return None

    def at_reference(
        self,
        deployment_id: int,
        fit: dict | None,
        concurrency: int,
        dataset: str | None,
        facts: DeploymentFacts,
        comm_fraction: float = 0.0,
    ) -> float | None:
        """The baseline at the load a calibrated set's fit states its drafting and overhead at
        (`fit.reference_concurrency`), for cost_params' reference_baseline_tps; None when the set has no
        reference load or this is it."""
        reference = (fit or {}).get("reference_concurrency")
        if reference is None or reference == concurrency:
            return None
        return self.at_load(deployment_id, reference, dataset, facts, comm_fraction)


def load_baselines(session: Session, deployment_id: int | None = None) -> Baselines:
    query = select(
        Benchmark.deployment_id, Benchmark.concurrency, Benchmark.dataset, Benchmark.decode_tps
    ).where(Benchmark.speculative_algorithm.is_(None), Benchmark.superseded_by_id.is_(None))
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
