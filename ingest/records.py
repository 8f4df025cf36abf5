"""The records every input format is turned into before it is stored: specdash's own (native) format.

Native files use exactly these fields (unknown keys are an error); engine formats are parsed by their own
modules and produce the same records."""

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from specdash.db.models import BUILTIN_SOURCES

Name = Annotated[str, Field(min_length=1, max_length=200)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
Share = Annotated[float, Field(ge=0, le=1)]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    # Fields where infinity means something (a request rate of inf: every request sent at once).
    INFINITE_OK: ClassVar[frozenset[str]] = frozenset()

    @field_validator("*", mode="after")
    @classmethod
    def _finite(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            if not (math.isinf(value) and value > 0 and info.field_name in cls.INFINITE_OK):
                raise ValueError("must be a finite number")
        return value


class DeploymentRecord(Record):
    kind: Literal["deployment"] = "deployment"
    name: Name
    gpu: str | None = None
    num_gpus: Annotated[int, Field(ge=1)] | None = None
    tp_size: Annotated[int, Field(ge=1)] | None = None
    interconnect: str | None = None
    engine: str | None = None
    target_model: str | None = None
    target_hidden_size: Annotated[int, Field(ge=1)] | None = None
    baseline_tps: PositiveFloat | None = None
    comm_fraction: Annotated[float, Field(ge=0, lt=1)] = 0.0
    draft_step_ms: NonNegFloat = 0.0
    round_overhead_ms: NonNegFloat = 0.0
    verify_growth_compute: NonNegFloat = 0.0
    verify_growth_comm: NonNegFloat = 0.0
    gap_threshold: Annotated[float, Field(gt=0, le=1)] | None = None
    notes: str | None = None
    is_demo: bool = False


class RunRecord(Record):
    kind: Literal["run"] = "run"
    name: Name
    framework: str | None = None
    target_model: str | None = None
    speculative_algorithm: str | None = None
    ttt_length: Annotated[int, Field(ge=1)] | None = None
    hidden_size: Annotated[int, Field(ge=1)] | None = None
    data_size: Annotated[int, Field(ge=0)] | None = None
    status: Literal["running", "finished", "killed"] = "finished"
    config: dict[str, Any] | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    notes: str | None = None
    is_demo: bool = False


class CheckpointRecord(Record):
    kind: Literal["checkpoint"] = "checkpoint"
    run: Name
    name: Name
    epoch: Annotated[int, Field(ge=0)] | None = None
    step: Annotated[int, Field(ge=0)] | None = None
    path: str | None = None
    # conditional acceptance per TTT position (training acc_0, acc_1, ...)
    acceptance: list[Share] | None = None


class MetricsRecord(Record):
    """Training metrics of one run at one step: `{"run": ..., "step": 50, "values": {"train/acc_0": 0.7}}`."""

    kind: Literal["metrics"] = "metrics"
    run: Name
    step: Annotated[int, Field(ge=0)]
    values: dict[str, float]

    @field_validator("values")
    @classmethod
    def _finite_values(cls, values: dict[str, float]) -> dict[str, float]:
        for key, value in values.items():
            if not math.isfinite(value):
                raise ValueError(f"{key}: must be a finite number")
        return values


class SpeculationSetting(Record):
    speculative_algorithm: str | None = None  # None: no speculation (a baseline)
    num_steps: Annotated[int, Field(ge=1)] | None = None
    topk: Annotated[int, Field(ge=1)] | None = None
    num_draft_tokens: Annotated[int, Field(ge=1)] | None = None

    @field_validator("num_draft_tokens")
    @classmethod
    def _enough_draft_tokens(cls, value: int | None, info: ValidationInfo) -> int | None:
        steps, topk = info.data.get("num_steps"), info.data.get("topk") or 1
        if value is not None and steps is not None and topk == 1 and value < steps:
            raise ValueError(f"{value} draft tokens cannot hold {steps} draft steps (need >= num_steps)")
        return value


class BenchmarkRecord(SpeculationSetting):
    INFINITE_OK: ClassVar[frozenset[str]] = frozenset({"request_rate"})

    kind: Literal["benchmark"] = "benchmark"
    deployment: Name
    run: Name | None = None
    checkpoint: Name | None = None
    drafter_path: str | None = None
    engine: str | None = None
    concurrency: Annotated[int, Field(ge=1)] = 1
    dataset: str | None = None
    num_prompts: Annotated[int, Field(ge=0)] | None = None
    decode_tps: PositiveFloat  # per request
    output_throughput: PositiveFloat | None = None  # aggregate
    accept_length: Annotated[float, Field(ge=1)] | None = None
    median_tpot_ms: PositiveFloat | None = None
    median_ttft_ms: NonNegFloat | None = None
    median_itl_ms: NonNegFloat | None = None
    p99_tpot_ms: PositiveFloat | None = None
    p99_ttft_ms: NonNegFloat | None = None
    p99_itl_ms: NonNegFloat | None = None
    request_rate: PositiveFloat | None = None  # requests/s; inf: all sent at once
    # Spread of per-request decode tok/s over the intervals a server log was summarised from.
    decode_tps_p10: PositiveFloat | None = None
    decode_tps_p90: PositiveFloat | None = None
    interval_count: Annotated[int, Field(ge=1)] | None = None
    # Measured survival rate per draft position: share of rounds whose first k drafts were accepted.
    position_survival: list[Share] | None = None
    engine_version: Annotated[str, Field(max_length=40)] | None = None
    draft_hidden_size: Annotated[int, Field(ge=1)] | None = None
    label: str | None = None
    measured_at: datetime | None = None
    raw: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _checkpoint_needs_run(self):
        if self.checkpoint is not None and self.run is None and self.drafter_path is None:
            raise ValueError("checkpoint given without run")
        return self


class PredictionRecord(SpeculationSetting):
    """An external prediction (a simulator, a spreadsheet) to compare benchmarks with."""

    kind: Literal["prediction"] = "prediction"
    source: Annotated[str, Field(min_length=1, max_length=100)]
    speculative_algorithm: str
    num_steps: Annotated[int, Field(ge=1)]
    run: Name
    checkpoint: Name
    deployment: Name
    concurrency: Annotated[int, Field(ge=1)] = 1
    dataset: str | None = None
    predicted_tps: PositiveFloat
    accept_length: Annotated[float, Field(ge=1)] | None = None
    round_ms: PositiveFloat | None = None

    @field_validator("source")
    @classmethod
    def _not_builtin(cls, source: str) -> str:
        if source in BUILTIN_SOURCES:
            raise ValueError(f"{' and '.join(map(repr, BUILTIN_SOURCES))} are specdash's own sources; name yours otherwise")
        return source


AnyRecord = (
    DeploymentRecord | RunRecord | CheckpointRecord | MetricsRecord | BenchmarkRecord | PredictionRecord
)

RECORD_TYPES: dict[str, type[Record]] = {
    "deployment": DeploymentRecord,
    "run": RunRecord,
    "checkpoint": CheckpointRecord,
    "metrics": MetricsRecord,
    "benchmark": BenchmarkRecord,
    "prediction": PredictionRecord,
}


@dataclass(slots=True)
class MetricRows:
    """Training metrics of one run from a log or tracker export: (step, keys, values) per logged step,
    already checked by the parser (int step >= 0, finite floats, keys <= 200 characters). A training log
    holds millions of points, so these skip pydantic and travel in batches."""

    run: str
    steps: list[tuple[int, tuple[str, ...], list[float]]]
    kind: ClassVar[str] = "metric_rows"


SPECULATION_UNKNOWN = "unknown"  # speculation ran, the file does not say which algorithm
