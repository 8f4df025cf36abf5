"""A stored parameter set as the cost model reads it: the costs it states (CostSet) and, for a calibrated
set, what its fit recorded (CalibratedSet): a draft cost per drafter, the verify growth's shape, the load
its drafting and overhead were fitted at, a factor per dataset's rounds, and its expected-error band.

CostSet.costs() turns them into one drafter's CostParams at one load and setting; the store keeps sets
as rows (db/parameters.py) and the fit as JSON (CalibratedSet.to_json / from_json)."""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from specdash.costmodel.priors import (
    DEFAULT_FAMILY,
    DeploymentFacts,
    TargetArchitecture,
    growth_shape,
    resolve_costs,
)
from specdash.costmodel.throughput import CostParams
from specdash.costmodel.uncertainty import error_band

if TYPE_CHECKING:  # calibration needs numpy: loaded only where a fit is made
    from specdash.costmodel.calibration import CalibrationFit, FittedParams
    from specdash.costmodel.loadmodel import LoadParams

# the parts of a round a calibrated set states at its reference load; they grow with the step as the load does
LOAD_SCALED = ("draft_step_ms", "round_overhead_ms", "draft_branch_ms")


@dataclass(frozen=True)
class CalibratedSet:
    """What a calibrated parameter set's fit recorded (the `fit` JSON of a stored set). Fits saved before
    a key existed lack it: no reference load, no band (rebuilt from the held-out p90), and so on."""

    n_benchmarks: int | None = None
    excluded: int | None = None
    exclusions: Mapping[str, int] = field(default_factory=dict)
    free: tuple[str, ...] = ()
    median_abs_rel_error: float | None = None
    p90_abs_rel_error: float | None = None
    loo_median_abs_rel_error: float | None = None
    loo_p90_abs_rel_error: float | None = None
    cross_validation: str | None = None
    error_band: float | None = None  # as recorded; prediction_band() also reads older fits
    # each drafter's own draft step ms (run id as text -> ms)
    draft_step_ms_by_drafter: Mapping[str, float] = field(default_factory=dict)
    # "architecture": the verify growth is stated at GROWTH_REFERENCE and carried by the target's shape
    growth_shape: str | None = None
    # the load drafting and overhead are stated at; they grow with the baseline step at others
    reference_concurrency: int | None = None
    round_scale_by_dataset: Mapping[str, float] = field(default_factory=dict)
    loss: str | None = None
    loss_scale: float | None = None
    prior_weight: float | None = None
    prior: Mapping[str, Any] = field(default_factory=dict)
    base_parameter_set_id: int | None = None
    benchmark_ids: tuple[int, ...] = ()
    # the round as a function of batch and depth fitted to every load (costmodel/loadcosts.py's JSON):
    # predictions at any concurrency come from it; fits saved before it have none
    load_model: Mapping[str, Any] = field(default_factory=dict)
    # the loads (distinct concurrencies) it was fitted at: at one, the batch-1 fit (its per-dataset
    # factors) predicts the benchmarks better, and the load model serves only other loads
    load_levels: int = 0
    # the fit had no run without speculation: its baselines were estimated (costmodel/estimated.py)
    baseline_estimated: bool = False

    @classmethod
    def from_json(cls, fit: Mapping[str, Any] | None) -> "CalibratedSet | None":
        """The fit of a stored set (None for a theory set, which has none)."""
        if not fit:
            return None
        known = {name: fit[name] for name in cls.__dataclass_fields__ if fit.get(name) is not None}
        for name in ("free", "benchmark_ids"):
            if name in known:
                known[name] = tuple(known[name])
        return cls(**known)

    @classmethod
    def from_fit(
        cls,
        fit: "CalibrationFit",
        exclusions: Mapping[str, int],
        reference_concurrency: int | None,
        base_parameter_set_id: int | None,
        benchmark_ids: tuple[int, ...],
        load_model: "LoadParams | None" = None,
        baseline_estimated: bool = False,
        load_levels: int = 0,
    ) -> "CalibratedSet":
        """What a new calibrated set records about how it was obtained."""
        from specdash.costmodel import calibration
        from specdash.costmodel.loadcosts import load_params_json

        return cls(
            n_benchmarks=len(benchmark_ids),
            excluded=sum(exclusions.values()),
            exclusions=dict(exclusions),
            free=tuple(fit.free),
            median_abs_rel_error=fit.median_abs_rel_error,
            p90_abs_rel_error=fit.p90_abs_rel_error,
            loo_median_abs_rel_error=fit.loo_median_abs_rel_error,
            loo_p90_abs_rel_error=fit.loo_p90_abs_rel_error,
            cross_validation=fit.cross_validation,
            error_band=error_band(fit.cv_errors),
            draft_step_ms_by_drafter=dict(fit.params.draft_step_ms_by_drafter),
            growth_shape="architecture",
            reference_concurrency=reference_concurrency,
            round_scale_by_dataset=dict(fit.params.round_scale_by_dataset),
            loss=calibration.LOSS,
            loss_scale=calibration.LOSS_SCALE,
            prior_weight=calibration.PRIOR_WEIGHT,
            prior=vars(fit.prior),
            base_parameter_set_id=base_parameter_set_id,
            benchmark_ids=benchmark_ids,
            load_model=load_params_json(load_model) if load_model is not None else {},
            baseline_estimated=baseline_estimated,
            load_levels=load_levels,
        )

    def to_json(self) -> dict[str, Any]:
        """The fit as stored with the set (and shown by `specdash calibrate --format json`), key by key in
        the order of the fields above."""
        return {name: _plain(getattr(self, name)) for name in self.__dataclass_fields__}

    def prediction_band(self) -> float | None:
        """The expected-error band of the set's predictions: the one its fit recorded; a fit saved before
        bands existed recorded its held-out p90 and size, and the band is rebuilt from those."""
        if self.error_band is not None:
            return float(self.error_band)
        if self.loo_p90_abs_rel_error is None or not self.n_benchmarks:
            return None
        return error_band([self.loo_p90_abs_rel_error] * int(self.n_benchmarks))

    def draft_step_ms_for(self, drafter: object | None) -> float | None:
        """The drafter's own fitted draft step cost (drafters are keyed by run id), if the fit has one."""
        if drafter is None:
            return None
        return self.draft_step_ms_by_drafter.get(str(drafter))

    def load_params(self, architecture: TargetArchitecture | None = None) -> "LoadParams | None":
        """The fitted round of batch and depth on the deployment's target, None for a fit without one."""
        if not self.load_model:
            return None
        from specdash.costmodel.loadcosts import load_params_from_json  # loadmodel loads numpy

        return load_params_from_json(self.load_model, architecture)

    def predicts_by_load(self) -> bool:
        """Whether its benchmarks' predictions come from the load model: fitted at two loads or more, or
        on estimated baselines (which only the load model states consistently)."""
        return bool(self.load_model) and (self.load_levels > 1 or self.baseline_estimated)

    def round_scale(self, dataset: str | None) -> float:
        """The fit's factor on this dataset's whole round (1 for a dataset it has none for)."""
        return self.round_scale_by_dataset.get(dataset or "") or 1.0


@dataclass(frozen=True)
class CostSet:
    """A parameter set's costs as it states them (None: not stated, the published prior applies) and,
    when calibrated, its fit. A deployment's profile is one too (an unsaved theory set)."""

    comm_fraction: float | None = None
    draft_step_ms: float | None = None
    round_overhead_ms: float | None = None
    verify_growth_compute: float | None = None
    verify_growth_comm: float | None = None
    draft_branch_ms: float | None = 0.0
    acc_to_acceptance: float = 1.0
    baseline_tps: float | None = None  # the profile's; a measured baseline is preferred (sources.py)
    fit: CalibratedSet | None = None

    @property
    def by_drafter(self) -> bool:
        """Whether its costs differ by drafter (a fit with per-drafter draft costs)."""
        return self.fit is not None and bool(self.fit.draft_step_ms_by_drafter)

    @property
    def by_dataset(self) -> bool:
        """Whether its costs differ by dataset (a fit with per-dataset round factors)."""
        return self.fit is not None and bool(self.fit.round_scale_by_dataset)

    @property
    def reference_concurrency(self) -> int | None:
        return self.fit.reference_concurrency if self.fit is not None else None

    def error_band(self) -> float | None:
        """The band its predictions carry: the fit's (None for a theory set: the prior's band applies)."""
        return self.fit.prediction_band() if self.fit is not None else None

    def costs(
        self,
        baseline_tps: float,
        facts: DeploymentFacts | None = None,
        family: str = DEFAULT_FAMILY,
        concurrency: int = 1,
        draft_tokens: int = 4,
        drafter: object | None = None,
        dataset: str | None = None,
        reference_baseline_tps: float | None = None,
    ) -> CostParams:
        """The set's costs for one drafter (of `family`) at one load and setting: stated values, the priors
        for the ones it leaves unstated; a calibrated set's own draft cost for the drafter when it fitted
        one, its drafting and overhead carried from the fit's reference load by the step's growth (given the
        baseline at that load, `reference_baseline_tps`), its verify growth carried from the reference load
        by the architecture's shape, and its factor on the dataset's rounds when it fitted one."""
        facts = facts or DeploymentFacts()
        fit = self.fit or _NO_FIT
        stated: dict[str, float | None] = {
            "comm_fraction": self.comm_fraction,
            "draft_step_ms": self.draft_step_ms,
            "round_overhead_ms": self.round_overhead_ms,
            "verify_growth_compute": self.verify_growth_compute,
            "verify_growth_comm": self.verify_growth_comm,
            "draft_branch_ms": self.draft_branch_ms or 0.0,
        }
        own = fit.draft_step_ms_for(drafter)
        if own is not None:
            stated["draft_step_ms"] = own
        if reference_baseline_tps and fit.reference_concurrency is not None:
            load_scale = reference_baseline_tps / baseline_tps
            for name in LOAD_SCALED:
                value = stated[name]
                if value is not None:
                    stated[name] = value * load_scale
        if fit.growth_shape == "architecture" and self.verify_growth_compute is not None:
            shape = growth_shape(facts, concurrency, draft_tokens)
            stated["verify_growth_compute"] = self.verify_growth_compute * shape
            stated["verify_growth_comm"] = (self.verify_growth_comm or 0.0) * shape
        params = resolve_costs(stated, facts, baseline_tps, family, concurrency, draft_tokens)
        scale = fit.round_scale(dataset)
        if scale == 1.0:
            return params
        # the fit's factor on this dataset's whole round: every part of it scales
        return replace(
            params,
            baseline_tps=params.baseline_tps / scale,
            draft_step_ms=params.draft_step_ms * scale,
            round_overhead_ms=params.round_overhead_ms * scale,
            draft_branch_ms=params.draft_branch_ms * scale,
        )

    def as_fitted(self) -> "FittedParams":
        """The set's values as calibration's free parameters (its starting point and prior)."""
        from specdash.costmodel.calibration import FittedParams

        comm = self.comm_fraction or 0.0
        return FittedParams(
            draft_step_ms=self.draft_step_ms or 0.0,
            draft_branch_ms=self.draft_branch_ms or 0.0,
            round_overhead_ms=self.round_overhead_ms or 0.0,
            verify_growth=(self.verify_growth_compute or 0.0) * (1 - comm)
            + (self.verify_growth_comm or 0.0) * comm,
            acc_to_acceptance=self.acc_to_acceptance,
        )


def _plain(value: Any) -> Any:
    """A field's value as JSON holds it: mappings as dicts, tuples as lists."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


_NO_FIT = CalibratedSet()
