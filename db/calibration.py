"""Store-side calibration: a deployment's trusted benchmarks become observations, the cost model fits
them, and the result is saved as a new calibrated parameter set (never an overwrite)."""

import dataclasses
import statistics
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from specdash.costmodel import (
    CalibrationFit,
    CalibrationObservation,
    FittedParams,
    GapContext,
    NotEnoughObservations,
    diagnose,
    fit_calibration,
    has_critical,
    verified_tokens,
)
from specdash.costmodel.calibrated import CalibratedSet, CostSet
from specdash.costmodel.domain import PredictionSource, Setting
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.priors import (
    DEFAULT_FAMILY,
    GROWTH_REFERENCE,
    DeploymentFacts,
    drafter_family,
    growth_shape,
)
from specdash.costmodel.throughput import draft_steps
from specdash.costmodel.uncertainty import error_band
from specdash.db.acceptance import checkpoint_rates
from specdash.db.changes import record_change
from specdash.db.loadmodels import (
    baseline_observations,
    estimated_baselines,
    fit_deployment_load,
    fitted_observations,
)
from specdash.db.models import (
    BENCHMARK_SETTING,
    Benchmark,
    Checkpoint,
    Deployment,
    ParameterSet,
    Run,
)
from specdash.db.parameters import (
    Baselines,
    active_sets,
    cost_set,
    deployment_facts,
    load_baselines,
    next_version,
    profile_costs,
)


@dataclass(frozen=True)
class CalibrationReport:
    deployment_id: int
    deployment_name: str
    fit: CalibrationFit
    base_parameter_set_id: int | None  # the theory set the fit started from (its prior)
    comm_fraction: float
    baseline_tps: float | None  # the profile's; predictions use the measured baseline when there is one
    benchmark_ids: tuple[int, ...]
    exclusions: dict[str, int] = field(default_factory=dict)  # reason -> benchmarks left out
    drafter_names: dict[str, str] = field(default_factory=dict)  # drafter key (run id) -> run name
    reference_concurrency: int | None = None  # the load drafting and overhead were fitted at
    load_params: LoadParams | None = None  # the round of batch and depth fitted to every load
    baseline_estimated: bool = False  # no run without speculation: baselines estimated from the sweep
    concurrencies: tuple[int, ...] = ()  # the loads of the fitted benchmarks

    def calibrated_set(self) -> CalibratedSet:
        """The fit as the calibrated parameter set saved from it records it."""
        return CalibratedSet.from_fit(
            self.fit,
            self.exclusions,
            self.reference_concurrency,
            self.base_parameter_set_id,
            self.benchmark_ids,
            self.load_params,
            self.baseline_estimated,
            len(set(self.concurrencies)),
        )

    def draft_step_ms_by_name(self) -> dict[str, float]:
        return {self.drafter_names.get(k, k): v for k, v in self.params.draft_step_ms_by_drafter}

    @property
    def error_band(self) -> float:
        return error_band(self.fit.cv_errors)

    @property
    def params(self) -> FittedParams:
        return self.fit.params

    @property
    def n_benchmarks(self) -> int:
        return len(self.benchmark_ids)

    @property
    def excluded(self) -> int:
        return sum(self.exclusions.values())

    @property
    def median_abs_rel_error(self) -> float:
        return self.fit.median_abs_rel_error

    @property
    def p90_abs_rel_error(self) -> float:
        return self.fit.p90_abs_rel_error

    @property
    def loo_median_abs_rel_error(self) -> float:
        return self.fit.loo_median_abs_rel_error

    @property
    def loo_p90_abs_rel_error(self) -> float:
        return self.fit.loo_p90_abs_rel_error


@dataclass(frozen=True)
class SkippedDeployment:
    deployment_id: int
    deployment_name: str
    reason: str
    exclusions: dict[str, int]


@dataclass
class _Screened:
    observations: list[CalibrationObservation] = field(default_factory=list)
    benchmark_ids: list[int] = field(default_factory=list)
    exclusions: Counter = field(default_factory=Counter)
    families: dict[str, str] = field(default_factory=dict)  # drafter (run id) -> drafter family
    names: dict[str, str] = field(default_factory=dict)  # drafter (run id) -> run name
    concurrencies: list[int] = field(default_factory=list)
    datasets: list[str | None] = field(default_factory=list)
    reference_concurrency: int | None = None  # the load drafting and overhead are fitted at


def _theory_set(session: Session, deployment: Deployment) -> ParameterSet | None:
    return session.scalars(
        select(ParameterSet)
        .where(
            ParameterSet.deployment_id == deployment.id,
            ParameterSet.source == PredictionSource.THEORY,
            ParameterSet.is_active.is_(True),
        )
        .order_by(ParameterSet.version.desc())
    ).first()


def _prior(costs: CostSet, facts: DeploymentFacts, screened: _Screened) -> FittedParams:
    """Where the fit starts and what it is pulled toward: the profile's stated costs, the published priors
    for the rest (at the median load and baseline of the benchmarks), a draft cost per drafter by family."""
    if not screened.observations:
        return costs.as_fitted()
    base_tps = float(statistics.median(o.baseline_tps for o in screened.observations))
    concurrency = int(statistics.median(screened.concurrencies))
    per_drafter = {}
    for drafter, family in screened.families.items():
        per_drafter[drafter] = costs.costs(base_tps, facts, family, concurrency).draft_step_ms
    shared = costs.costs(base_tps, facts, DEFAULT_FAMILY, *GROWTH_REFERENCE)
    return FittedParams(
        draft_step_ms=float(statistics.median(per_drafter.values())),
        draft_branch_ms=costs.draft_branch_ms or 0.0,
        round_overhead_ms=costs.costs(base_tps, facts, DEFAULT_FAMILY, concurrency).round_overhead_ms,
        verify_growth=shared.verify_growth,
        acc_to_acceptance=costs.acc_to_acceptance or 1.0,
        draft_step_ms_by_drafter=tuple(sorted(per_drafter.items())),
    )


_SCREENED_COLUMNS = (
    Benchmark.id,
    Benchmark.checkpoint_id,
    *BENCHMARK_SETTING,
    Benchmark.decode_tps,
    Benchmark.accept_length,
    Benchmark.draft_hidden_size,
    Benchmark.superseded_by_id,
    Run.speculative_algorithm.label("drafter_algorithm"),
    Run.hidden_size.label("drafter_hidden_size"),
    Run.id.label("run_id"),
    Run.name.label("run_name"),
)


def _screen(
    session: Session,
    deployment: Deployment,
    baselines: Baselines,
    profile_baseline: float | None,
    facts: DeploymentFacts,
    estimate: BaselineEstimate | None = None,
) -> _Screened:
    """Trusted benchmarks as observations; the rest counted by why they were left out. A deployment
    measured only with speculation is fitted against its `estimate`d baselines."""
    # plain columns, not ORM objects: a deployment may hold tens of thousands of benchmarks
    rows = session.execute(
        select(*_SCREENED_COLUMNS)
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Run, Checkpoint.run_id == Run.id)
        .where(Benchmark.deployment_id == deployment.id, Benchmark.speculative_algorithm.is_not(None))
        .order_by(Benchmark.id)
    ).all()
    rates = checkpoint_rates(session, sorted({b.checkpoint_id for b in rows if b.checkpoint_id}))
    out = _Screened()
    for bench in rows:
        steps = draft_steps(bench.num_steps, bench.topk, bench.num_draft_tokens)
        # interpolated between measured loads, never extrapolated: a fit rests on measurements
        baseline = baselines.choose(
            deployment.id,
            bench.concurrency,
            bench.dataset,
            facts,
            profile_tps=profile_baseline,
            extrapolate=False,
        ) or (estimate.at(bench.concurrency).baseline_tps if estimate is not None else None)
        trained = _trained_rates(
            rates.get(bench.checkpoint_id) if bench.checkpoint_id else None, bench, steps
        )
        why = _left_out(bench, steps, baseline, trained)
        if why is not None:
            out.exclusions[why] += 1
        else:
            assert steps is not None and baseline is not None
            _observe(out, bench, steps, baseline, trained, facts)
    _scale_to_reference_load(out, deployment, baselines, facts)
    return out


def _trained_rates(
    trained: tuple[float, ...] | None, bench: Row, steps: int | None
) -> tuple[float, ...] | None:
    """The drafter's training rates for a fit, unless the setting drafts past them: rates past the trained
    depth are extrapolated, and would bias the acc-to-acceptance factor."""
    topk = Setting(None, steps, bench.topk).width
    if (
        trained
        and steps
        and min(steps, verified_tokens(steps, topk, bench.num_draft_tokens) - 1) > len(trained)
    ):
        return None
    return trained


def _left_out(
    bench: Row, steps: int | None, baseline: float | None, trained: tuple[float, ...] | None
) -> str | None:
    """Why a benchmark cannot be fitted to (None: it can)."""
    verdict = diagnose(
        GapContext(
            decomposition=None,
            benchmark_algorithm=bench.speculative_algorithm,
            drafter_algorithm=bench.drafter_algorithm,
            draft_hidden_size=bench.draft_hidden_size,
            drafter_hidden_size=bench.drafter_hidden_size,
        )
    )
    if bench.superseded_by_id is not None:
        return "superseded"
    if has_critical(verdict):
        return "critical diagnosis"
    if not steps:
        return "no speculation setting"
    if not baseline:
        return "no baseline"
    if not bench.accept_length and not trained:
        return "no accept length"
    return None


def _observe(
    out: _Screened,
    bench: Row,
    steps: int,
    baseline: float,
    trained: tuple[float, ...] | None,
    facts: DeploymentFacts,
) -> None:
    """A trusted benchmark as one observation of the fit."""
    topk = Setting(None, steps, bench.topk).width
    draft_tokens = verified_tokens(steps, topk, bench.num_draft_tokens)
    drafter = str(bench.run_id or "")
    out.families[drafter] = drafter_family(bench.drafter_algorithm, bench.speculative_algorithm)
    out.names[drafter] = bench.run_name or drafter
    out.observations.append(
        CalibrationObservation(
            steps=steps,
            topk=topk,
            draft_tokens=draft_tokens,
            measured_tps=bench.decode_tps,
            baseline_tps=baseline,
            measured_accept_length=bench.accept_length or None,
            training_rates=trained,
            label=f"benchmark {bench.id}",
            drafter=drafter,
            growth_shape=growth_shape(facts, bench.concurrency, draft_tokens),
            dataset=bench.dataset or "",
        )
    )
    out.benchmark_ids.append(bench.id)
    out.concurrencies.append(bench.concurrency)
    out.datasets.append(bench.dataset)


def _scale_to_reference_load(
    screened: _Screened, deployment: Deployment, baselines: Baselines, facts: DeploymentFacts
) -> None:
    """Drafting and the round's bookkeeping are fitted at the lowest load benchmarked (the reference) and
    grow with the step as the load does: each observation at a higher load carries T_base(B) / T_base(ref)
    of its dataset (1 where the reference load has no baseline to compare with)."""
    if not screened.concurrencies:
        return
    reference = screened.reference_concurrency = min(screened.concurrencies)
    for index, (observation, concurrency, dataset) in enumerate(
        zip(screened.observations, screened.concurrencies, screened.datasets, strict=True)
    ):
        if concurrency == reference:
            continue
        at_reference = baselines.choose(deployment.id, reference, dataset, facts)
        if at_reference:
            screened.observations[index] = dataclasses.replace(
                observation, load_scale=at_reference / observation.baseline_tps
            )


def calibrate_all(
    session: Session, deployment_id: int | None = None
) -> tuple[list[CalibrationReport], list[SkippedDeployment]]:
    """Fit every deployment (or the one given) that has enough trusted benchmarks; say why the others
    were skipped."""
    query = select(Deployment).order_by(Deployment.name)
    if deployment_id is not None:
        query = query.where(Deployment.id == deployment_id)
    baselines = load_baselines(session, deployment_id)
    estimates = estimated_baselines(session, None if deployment_id is None else [deployment_id])
    reports, skipped = [], []
    for deployment in session.scalars(query):
        theory = _theory_set(session, deployment)
        profile_baseline = theory.baseline_tps if theory else deployment.baseline_tps
        facts = deployment_facts(deployment)
        estimate = estimates.get(deployment.id) if not profile_baseline else None
        screened = _screen(session, deployment, baselines, profile_baseline, facts, estimate)
        costs = cost_set(theory) if theory else profile_costs(deployment)
        prior = _prior(costs, facts, screened)
        try:
            fit = fit_calibration(screened.observations, prior)
        except NotEnoughObservations as exc:
            skipped.append(
                SkippedDeployment(deployment.id, deployment.name, str(exc), dict(screened.exclusions))
            )
            continue
        reports.append(
            CalibrationReport(
                deployment_id=deployment.id,
                deployment_name=deployment.name,
                fit=fit,
                base_parameter_set_id=theory.id if theory else None,
                comm_fraction=costs.costs(100.0, facts).comm_fraction,
                baseline_tps=profile_baseline,
                benchmark_ids=tuple(screened.benchmark_ids),
                exclusions=dict(screened.exclusions),
                drafter_names=dict(screened.names),
                reference_concurrency=screened.reference_concurrency,
                load_params=fit_deployment_load(
                    fitted_observations(
                        screened.observations, screened.concurrencies, fit.params.acc_to_acceptance
                    )
                    + baseline_observations(baselines.measured_loads(deployment.id)),
                    facts,
                    screened.families,
                ),
                baseline_estimated=estimate is not None,
                concurrencies=tuple(screened.concurrencies),
            )
        )
    return reports, skipped


def calibrate(session: Session, deployment_id: int | None = None) -> list[CalibrationReport]:
    """One report per deployment with enough trusted benchmarks (see calibrate_all for the others)."""
    return calibrate_all(session, deployment_id)[0]


def fit_summary(report: CalibrationReport) -> dict:
    """What a calibrated parameter set records about how it was obtained (its `fit`)."""
    return report.calibrated_set().to_json()


def apply_calibration(session: Session, report: CalibrationReport) -> ParameterSet:
    """Save the fit as the deployment's next parameter-set version (source `calibrated`, active); older
    calibrated sets of the deployment become inactive. Run refresh() afterwards for new predictions."""
    replaced = []
    for older in active_sets(session, report.deployment_id, PredictionSource.CALIBRATED):
        older.is_active = False
        replaced.append(older.version)
    params = report.params
    pset = ParameterSet(
        deployment_id=report.deployment_id,
        version=next_version(session, report.deployment_id),
        source=PredictionSource.CALIBRATED,
        baseline_tps=report.baseline_tps,
        comm_fraction=report.comm_fraction,
        draft_step_ms=params.draft_step_ms,
        draft_branch_ms=params.draft_branch_ms,
        round_overhead_ms=params.round_overhead_ms,
        verify_growth_compute=params.verify_growth,
        verify_growth_comm=params.verify_growth,
        acc_to_acceptance=params.acc_to_acceptance,
        fit=fit_summary(report),
        is_active=True,
        note=(
            f"fitted to {report.n_benchmarks} benchmark(s); {report.fit.cross_validation} median "
            f"abs error {report.loo_median_abs_rel_error:.1%}"
        ),
    )
    session.add(pset)
    session.flush()
    record_change(
        session,
        "calibrate",
        "parameter_set",
        session.get_one(Deployment, report.deployment_id).name,
        "calibrated version",
        max(replaced) if replaced else None,
        pset.version,
        note=pset.note,
    )
    return pset
