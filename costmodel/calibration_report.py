"""What a deployment's calibration reads and reports: a benchmark as the screen sees it, the report of a
deployment's fit (what is saved as a calibrated parameter set), and a deployment skipped and why."""

from dataclasses import dataclass, field
from typing import NamedTuple

from specdash.costmodel.calibrated import CalibratedSet
from specdash.costmodel.calibration import CalibrationFit, FittedParams
from specdash.costmodel.loadmodel import LoadParams
from specdash.costmodel.uncertainty import error_band


class CalibrationBenchmark(NamedTuple):
    """A speculative benchmark of the deployment with its drafter (the checkpoint's run), as screened."""

    id: int
    checkpoint_id: int | None
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    decode_tps: float
    accept_length: float | None
    draft_hidden_size: int | None
    superseded_by_id: int | None
    drafter_algorithm: str | None
    drafter_hidden_size: int | None
    run_id: int | None
    run_name: str | None


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
