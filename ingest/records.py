"""The records every input format is turned into before it is stored: specdash's own (native) format.

Native files use exactly these fields (unknown keys are an error); engine formats are parsed by their own
modules and produce the same records. Each field keeps its own type and range here; the rules that
compare fields or depend on the setting (ingest/rules/) apply to every record once parsed."""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator

from specdash.costmodel.acceptance import drafts_a_block
from specdash.costmodel.domain import Setting
from specdash.costmodel.priors import drafter_family, is_block_family
from specdash.costmodel.throughput import draft_width
from specdash.db.models import BUILTIN_SOURCES
from specdash.db.records import (
    MAX_DRAFT_TOKENS,
    MAX_STEPS,
    MAX_TOPK,
    AcceptLength,
    AggregateTps,
    ContextTokens,
    CostMs,
    Count,
    DeploymentRecord,
    LatencyMs,
    Name,
    Note,
    PathText,
    PositiveFloat,
    Record,
    RequestTps,
    Share,
    Short,
    StepMs,
    Text200,
    Whole,
)

# How a benchmark's concurrency was told (BenchmarkRecord.concurrency_source), every way in one list.
ConcurrencySource = Literal[
    "file",  # the file states it
    "log",  # a server log's running count
    "measured mean",  # the mean in flight a client measured (GuideLLM's request_concurrency)
    "scrape: running-requests gauge",  # the gauge's mean over a live window's scrapes
    "derived: Little's law",  # aggregate over per-request tok/s
    "derived: prompt count",  # an offline batch: all its prompts at once
]
CONCURRENCY_SOURCES: tuple[str, ...] = get_args(ConcurrencySource)
LIVE_CONCURRENCY: ConcurrencySource = "scrape: running-requests gauge"


EPOCH_YEAR = 1970


def _clock_time(moment: datetime) -> datetime:
    """A moment a clock of a training or serving machine wrote: engines and trackers count time from the
    Unix epoch, so a year before 1970 is no measurement (and years before 1000 are not even stored alike
    on SQLite and PostgreSQL)."""
    if moment.year < EPOCH_YEAR:
        raise ValueError(f"{moment.isoformat()} is before {EPOCH_YEAR}: no clock of a run or server wrote it")
    return moment


ClockTime = Annotated[datetime, AfterValidator(_clock_time)]


class RunRecord(Record):
    kind: Literal["run"] = "run"
    name: Name
    framework: Short | None = None
    target_model: Text200 | None = None
    speculative_algorithm: Short | None = None
    ttt_length: Annotated[int, Field(ge=1, le=MAX_STEPS)] | None = None
    hidden_size: Count | None = None
    data_size: Whole | None = None
    status: Literal["running", "finished", "killed"] = "finished"
    config: dict[str, Any] | None = None
    started_at: ClockTime | None = None
    ended_at: ClockTime | None = None
    notes: Note | None = None
    is_demo: bool = False

    @model_validator(mode="after")
    def _ends_after_start(self):
        if self.started_at and self.ended_at and _naive(self.ended_at) < _naive(self.started_at):
            raise ValueError(f"ended_at: {self.ended_at} is before started_at {self.started_at}")
        return self


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None) - (moment.utcoffset() or (moment - moment))


class CheckpointRecord(Record):
    kind: Literal["checkpoint"] = "checkpoint"
    run: Name
    name: Name
    epoch: Whole | None = None
    step: Whole | None = None
    path: PathText | None = None
    # conditional acceptance per TTT position (training acc_0, acc_1, ...)
    acceptance: Annotated[list[Share], Field(max_length=MAX_STEPS)] | None = None


class MetricsRecord(Record):
    """Training metrics of one run at one step: `{"run": ..., "step": 50, "values": {"train/acc_0": 0.7}}`."""

    kind: Literal["metrics"] = "metrics"
    run: Name
    step: Whole
    values: dict[Text200, float]

    @field_validator("values", mode="before")
    @classmethod
    def _numbers_only(cls, values: Any) -> Any:
        if isinstance(values, dict):
            for key, value in values.items():
                if isinstance(value, bool):
                    raise ValueError(f"{key}: must be a number, not true/false")
        return values

    @field_validator("values")
    @classmethod
    def _finite_values(cls, values: dict[str, float]) -> dict[str, float]:
        for key, value in values.items():
            if not math.isfinite(value):
                raise ValueError(f"{key}: must be a finite number")
            if not key:
                raise ValueError("a metric name must not be empty")
        return values


# The fields that make a speculation setting (SpeculationSetting's own, without a benchmark's others).
SPECULATION_FIELDS = ("speculative_algorithm", "num_steps", "topk", "num_draft_tokens")


class SpeculationSetting(Record):
    speculative_algorithm: Short | None = None  # None: no speculation (a baseline)
    num_steps: Annotated[int, Field(ge=1, le=MAX_STEPS)] | None = None
    topk: Annotated[int, Field(ge=1, le=MAX_TOPK)] | None = None
    num_draft_tokens: Annotated[int, Field(ge=1, le=MAX_DRAFT_TOKENS)] | None = None

    @field_validator("num_draft_tokens")
    @classmethod
    def _enough_draft_tokens(cls, value: int | None, info: ValidationInfo) -> int | None:
        steps, topk = info.data.get("num_steps"), draft_width(info.data.get("topk"))
        if value is not None and steps is not None and topk == 1 and value < steps:
            raise ValueError(f"{value} draft tokens cannot hold {steps} draft steps (need >= num_steps)")
        return value

    def setting(self) -> Setting:
        """The domain's value of this setting."""
        return Setting.of(self.speculative_algorithm, self.num_steps, self.topk, self.num_draft_tokens)

    def setting_fields(self) -> dict[str, Any]:
        """The setting's own fields by name, for a record built from it."""
        return {name: getattr(self, name) for name in SPECULATION_FIELDS}

    def drafts_a_block(self) -> bool:
        """Whether the drafter proposes all its tokens in one step (DFlash, DSpark): its family says so, or,
        when the algorithm is unknown, a setting with more draft tokens than steps can only be one."""
        return _drafts_a_block(self.speculative_algorithm, self.num_steps, self.topk, self.num_draft_tokens)

    def max_accept_length(self) -> float | None:
        """The most tokens one round can emit; 1 without speculation; None when unknown. A chain or tree
        drafts one token a step: the draft tokens N (which count the root) and the draft steps plus the
        bonus token, whichever is smaller. A block drafter drafts N - 1 in one step: N."""
        return _max_accept_length(
            self.speculative_algorithm, self.num_steps, self.topk, self.num_draft_tokens
        )


# A file's records share a handful of settings, and the bounds ask each record these twice or more: each
# setting's answer is worked out once (a 300,000-benchmark file: 6.0 -> 2.3 us of bounds a record).
@lru_cache(maxsize=1024)
def _drafts_a_block(algorithm: str | None, steps: int | None, topk: int | None, tokens: int | None) -> bool:
    if algorithm is None:
        return False
    if is_block_family(drafter_family(algorithm)):
        return True
    return algorithm == SPECULATION_UNKNOWN and drafts_a_block(steps or 1, draft_width(topk), tokens)


@lru_cache(maxsize=1024)
def _max_accept_length(
    algorithm: str | None, steps: int | None, topk: int | None, tokens: int | None
) -> float | None:
    if algorithm is None:
        return 1.0
    if _drafts_a_block(algorithm, steps, topk, tokens):
        return float(tokens) if tokens else None
    bounds = [b for b in (tokens, steps and steps + 1) if b]
    return float(min(bounds)) if bounds else None


class BenchmarkRecord(SpeculationSetting):
    INFINITE_OK: ClassVar[frozenset[str]] = frozenset({"request_rate"})

    kind: Literal["benchmark"] = "benchmark"
    deployment: Name
    run: Name | None = None
    checkpoint: Name | None = None
    drafter_path: PathText | None = None
    engine: Short | None = None
    concurrency: Count = 1
    concurrency_source: ConcurrencySource | None = None
    dataset: Text200 | None = None
    num_prompts: Whole | None = None
    # mean prompt and output tokens per request, where the file states them
    input_tokens: ContextTokens | None = None
    output_tokens: ContextTokens | None = None
    decode_tps: RequestTps  # per request
    output_throughput: AggregateTps | None = None  # aggregate
    accept_length: AcceptLength | None = None
    median_tpot_ms: StepMs | None = None
    median_ttft_ms: LatencyMs | None = None
    median_itl_ms: CostMs | None = None
    p99_tpot_ms: StepMs | None = None
    p99_ttft_ms: LatencyMs | None = None
    p99_itl_ms: CostMs | None = None
    request_rate: PositiveFloat | None = None  # requests/s; inf: all sent at once
    # Spread of per-request decode tok/s over the intervals a server log was summarised from.
    decode_tps_p10: RequestTps | None = None
    decode_tps_p90: RequestTps | None = None
    interval_count: Count | None = None
    # Measured survival rate per draft position: share of rounds whose first k drafts were accepted.
    position_survival: Annotated[list[Share], Field(max_length=MAX_DRAFT_TOKENS)] | None = None
    engine_version: Short | None = None
    draft_hidden_size: Count | None = None
    label: Text200 | None = None
    measured_at: ClockTime | None = None
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
    speculative_algorithm: Short
    num_steps: Annotated[int, Field(ge=1, le=MAX_STEPS)]
    run: Name
    checkpoint: Name
    deployment: Name
    concurrency: Count = 1
    dataset: Text200 | None = None
    predicted_tps: RequestTps
    accept_length: AcceptLength | None = None
    round_ms: StepMs | None = None

    @field_validator("source")
    @classmethod
    def _not_builtin(cls, source: str) -> str:
        if source in BUILTIN_SOURCES:
            raise ValueError(
                f"{' and '.join(map(repr, BUILTIN_SOURCES))} are specdash's own sources; name yours otherwise"
            )
        return source


AnyRecord = (
    DeploymentRecord | RunRecord | CheckpointRecord | MetricsRecord | BenchmarkRecord | PredictionRecord
)

RECORD_TYPES: dict[str, type[AnyRecord]] = {
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
    steps: Sequence[tuple[int, tuple[str, ...], Sequence[float]]]
    kind: ClassVar[str] = "metric_rows"


SPECULATION_UNKNOWN = "unknown"  # speculation ran, the file does not say which algorithm
# Algorithms whose "drafter" is the target's own multi-token-prediction head, not a model of its own.
OWN_HEAD_ALGORITHMS = frozenset({"MTP", "NEXTN"})
