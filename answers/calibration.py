"""A deployment's calibration decided over what the store read: which benchmarks it is fitted to and why
the others are left out, the prior it starts from, the load each observation is scaled to, and the report
of the fit (the parameter set the store saves from it)."""

import dataclasses
import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from specdash.costmodel import (
    CalibrationObservation,
    FittedParams,
    GapContext,
    NotEnoughObservations,
    diagnose,
    fit_calibration,
    has_critical,
    verified_tokens,
)
from specdash.costmodel.calibrated import CostSet
from specdash.costmodel.calibration_report import CalibrationBenchmark, CalibrationReport, SkippedDeployment
from specdash.costmodel.domain import Setting
from specdash.costmodel.estimated import BaselineEstimate
from specdash.costmodel.load_observations import (
    baseline_observations,
    fit_deployment_load,
    fitted_observations,
)
from specdash.costmodel.priors import (
    DEFAULT_FAMILY,
    GROWTH_REFERENCE,
    DeploymentFacts,
    drafter_family,
    growth_shape,
)
from specdash.costmodel.throughput import draft_steps

# the baseline tok/s of a deployment at (load, dataset), None where it has none
BaselineAt = Callable[[int, str | None], float | None]


@dataclass
class Screened:
    """The benchmarks a calibration is fitted to, as observations, and the others counted by why."""

    observations: list[CalibrationObservation] = field(default_factory=list)
    benchmark_ids: list[int] = field(default_factory=list)
    exclusions: Counter = field(default_factory=Counter)
    families: dict[str, str] = field(default_factory=dict)  # drafter (run id) -> drafter family
    names: dict[str, str] = field(default_factory=dict)  # drafter (run id) -> run name
    concurrencies: list[int] = field(default_factory=list)
    datasets: list[str | None] = field(default_factory=list)
    reference_concurrency: int | None = None  # the load drafting and overhead are fitted at


@dataclass(frozen=True)
class CalibrationInputs:
    """What one deployment's calibration reads from the store."""

    deployment_id: int
    deployment_name: str
    facts: DeploymentFacts
    costs: CostSet  # the active theory set's, else the profile's
    theory_set_id: int | None
    profile_baseline_tps: float | None  # the theory set's, else the profile's
    benchmarks: Sequence[CalibrationBenchmark]
    rates: Mapping[int, tuple[float, ...]]  # checkpoint id -> its training rates
    # interpolated between measured loads, never extrapolated: a fit rests on measurements
    measured_baseline: BaselineAt
    reference_baseline: BaselineAt  # the measured, interpolated or carried baseline at a reference load
    measured_loads: Mapping[int, float]  # {concurrency: tok/s} measured without speculation
    estimate: BaselineEstimate | None = None  # the estimated baselines when nothing else gives one


def prior(costs: CostSet, facts: DeploymentFacts, screened: Screened) -> FittedParams:
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


def screen(inputs: CalibrationInputs) -> Screened:
    """Trusted benchmarks as observations; the rest counted by why they were left out. A deployment
    measured only with speculation is fitted against its `estimate`d baselines."""
    out = Screened()
    estimate = inputs.estimate
    for bench in inputs.benchmarks:
        steps = draft_steps(bench.num_steps, bench.topk, bench.num_draft_tokens)
        baseline = inputs.measured_baseline(bench.concurrency, bench.dataset) or (
            estimate.at(bench.concurrency).baseline_tps if estimate is not None else None
        )
        trained = trained_rates(
            inputs.rates.get(bench.checkpoint_id) if bench.checkpoint_id else None, bench, steps
        )
        why = left_out(bench, steps, baseline, trained)
        if why is not None:
            out.exclusions[why] += 1
        else:
            assert steps is not None and baseline is not None
            observe(out, bench, steps, baseline, trained, inputs.facts)
    scale_to_reference_load(out, inputs.reference_baseline)
    return out


def trained_rates(
    trained: tuple[float, ...] | None, bench: CalibrationBenchmark, steps: int | None
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


def left_out(
    bench: CalibrationBenchmark, steps: int | None, baseline: float | None, trained: tuple[float, ...] | None
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


def observe(
    out: Screened,
    bench: CalibrationBenchmark,
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


def scale_to_reference_load(screened: Screened, baseline_at: BaselineAt) -> None:
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
        at_reference = baseline_at(reference, dataset)
        if at_reference:
            screened.observations[index] = dataclasses.replace(
                observation, load_scale=at_reference / observation.baseline_tps
            )


def calibration_report(inputs: CalibrationInputs) -> CalibrationReport | SkippedDeployment:
    """The deployment's fit to its trusted benchmarks, or why it was skipped (too few of them)."""
    screened = screen(inputs)
    try:
        fit = fit_calibration(screened.observations, prior(inputs.costs, inputs.facts, screened))
    except NotEnoughObservations as exc:
        return SkippedDeployment(
            inputs.deployment_id, inputs.deployment_name, str(exc), dict(screened.exclusions)
        )
    return CalibrationReport(
        deployment_id=inputs.deployment_id,
        deployment_name=inputs.deployment_name,
        fit=fit,
        base_parameter_set_id=inputs.theory_set_id,
        comm_fraction=inputs.costs.costs(100.0, inputs.facts).comm_fraction,
        baseline_tps=inputs.profile_baseline_tps,
        benchmark_ids=tuple(screened.benchmark_ids),
        exclusions=dict(screened.exclusions),
        drafter_names=dict(screened.names),
        reference_concurrency=screened.reference_concurrency,
        load_params=fit_deployment_load(
            fitted_observations(screened.observations, screened.concurrencies, fit.params.acc_to_acceptance)
            + baseline_observations(inputs.measured_loads),
            inputs.facts,
            screened.families,
        ),
        baseline_estimated=inputs.estimate is not None,
        concurrencies=tuple(screened.concurrencies),
    )
