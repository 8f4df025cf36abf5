"""SQLAlchemy 2.0 models of the store: deployments, runs, checkpoints, metrics, benchmarks, predictions, gaps."""

from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    false,
    literal_column,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from specdash.costmodel import domain
from specdash.costmodel.domain import ACTIVE_STATUSES as ACTIVE_STATUSES  # defined with GapStatus
from specdash.costmodel.domain import GapStatus, PredictionSource

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_N_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# An alert's investigation, from raised to closed; the first two (ACTIVE_STATUSES) are still being looked at.
GAP_STATUSES = tuple(status.value for status in GapStatus)
BUILTIN_SOURCES = tuple(source.value for source in PredictionSource)  # in order; any other is external


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Deployment(Base):
    """Hardware + serving setup, with the cost profile the theory predictions use."""

    __tablename__ = "deployment"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    gpu: Mapped[str | None] = mapped_column(String(100))
    num_gpus: Mapped[int | None]
    tp_size: Mapped[int | None]
    interconnect: Mapped[str | None] = mapped_column(String(20))  # pcie, nvlink, ...
    engine: Mapped[str | None] = mapped_column(String(40))  # sglang, vllm, ...
    target_model: Mapped[str | None] = mapped_column(String(200))
    target_hidden_size: Mapped[int | None]
    # Cost profile (docs/cost-model.md); the no-speculation benchmark overrides baseline_tps when present.
    baseline_tps: Mapped[float | None] = mapped_column(Float)
    # None: not stated, the published prior applies (costmodel/priors.py)
    comm_fraction: Mapped[float | None] = mapped_column(Float)
    draft_step_ms: Mapped[float | None] = mapped_column(Float)
    round_overhead_ms: Mapped[float | None] = mapped_column(Float)
    verify_growth_compute: Mapped[float | None] = mapped_column(Float)
    verify_growth_comm: Mapped[float | None] = mapped_column(Float)
    # The target's architecture (config.json and model card); None: looked up by target_model's name
    target_num_experts: Mapped[int | None]
    target_experts_per_token: Mapped[int | None]
    target_active_params_b: Mapped[float | None] = mapped_column(Float)
    target_total_params_b: Mapped[float | None] = mapped_column(Float)
    gap_threshold: Mapped[float | None] = mapped_column(Float)  # None: the global setting
    notes: Mapped[str | None] = mapped_column(Text)
    is_demo: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    parameter_sets: Mapped[list["ParameterSet"]] = relationship(back_populates="deployment")


class ParameterSet(Base):
    """A versioned copy of a deployment's cost parameters; calibration adds versions, never overwrites."""

    __tablename__ = "parameter_set"
    __table_args__ = (UniqueConstraint("deployment_id", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"), index=True)
    version: Mapped[int]
    source: Mapped[str] = mapped_column(String(40))  # theory | calibrated
    baseline_tps: Mapped[float | None] = mapped_column(Float)
    # None: the prior at each prediction's load and setting (a theory set of a profile that states none)
    comm_fraction: Mapped[float | None] = mapped_column(Float)
    draft_step_ms: Mapped[float | None] = mapped_column(Float)
    round_overhead_ms: Mapped[float | None] = mapped_column(Float)
    verify_growth_compute: Mapped[float | None] = mapped_column(Float)
    verify_growth_comm: Mapped[float | None] = mapped_column(Float)
    # extra drafting ms per step for each candidate beyond the first (topk > 1); calibrated, 0 in theory
    draft_branch_ms: Mapped[float] = mapped_column(Float, default=0.0, server_default="0")
    acc_to_acceptance: Mapped[float] = mapped_column(Float, default=1.0)
    fit: Mapped[dict[str, Any] | None]  # fit quality of a calibrated set
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    note: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    deployment: Mapped[Deployment] = relationship(back_populates="parameter_sets")


class Run(Base):
    """One drafter training run."""

    __tablename__ = "run"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    framework: Mapped[str | None] = mapped_column(String(40))  # specforge, eagle, ...
    target_model: Mapped[str | None] = mapped_column(String(200))
    speculative_algorithm: Mapped[str | None] = mapped_column(String(40))  # what the drafter is: EAGLE3, ...
    ttt_length: Mapped[int | None]
    hidden_size: Mapped[int | None]  # width of the drafter's input features (EAGLE-3: 3 x target hidden)
    data_size: Mapped[int | None]
    status: Mapped[str] = mapped_column(String(20), default="finished")  # running | finished | killed
    config: Mapped[dict[str, Any] | None]
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime)
    notes: Mapped[str | None] = mapped_column(Text)
    is_demo: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    tags: Mapped[list[Any] | None]  # labels set on the dashboard ("baseline", "ttt-sweep", ...)
    archived_at: Mapped[datetime | None] = mapped_column(DateTime)  # hidden from pickers, kept

    checkpoints: Mapped[list["Checkpoint"]] = relationship(back_populates="run")


class Checkpoint(Base):
    __tablename__ = "checkpoint"
    __table_args__ = (UniqueConstraint("run_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    epoch: Mapped[int | None]
    step: Mapped[int | None]
    path: Mapped[str | None] = mapped_column(String(1000), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    run: Mapped[Run] = relationship(back_populates="checkpoints")
    position_acceptance: Mapped[list["PositionAcceptance"]] = relationship(
        order_by="PositionAcceptance.position", cascade="all, delete-orphan"
    )


class PositionAcceptance(Base):
    """Conditional acceptance (training acc_i) at draft position i of a checkpoint."""

    __tablename__ = "position_acceptance"

    checkpoint_id: Mapped[int] = mapped_column(
        ForeignKey("checkpoint.id", ondelete="CASCADE"), primary_key=True
    )
    position: Mapped[int] = mapped_column(primary_key=True)  # 0-based TTT position
    rate: Mapped[float] = mapped_column(Float)
    source: Mapped[str] = mapped_column(String(40), default="training")


class MetricKey(Base):
    __tablename__ = "metric_key"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)


class MetricPoint(Base):
    """Long-format training metrics; a narrow primary key keeps millions of rows cheap."""

    __tablename__ = "metric_point"
    # On SQLite the rows live in the primary-key b-tree (one structure to write and read); rollups' too.
    __table_args__ = {"sqlite_with_rowid": False}

    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("metric_key.id"), primary_key=True)
    step: Mapped[int] = mapped_column(primary_key=True)
    value: Mapped[float] = mapped_column(Float)


class MetricRollup(Base):
    """A key's points summed per bucket of `width` steps: all of a (run, key)'s or none (db/rollups.py)."""

    __tablename__ = "metric_rollup"
    __table_args__ = {"sqlite_with_rowid": False}
    run_id: Mapped[int] = mapped_column(ForeignKey("run.id", ondelete="CASCADE"), primary_key=True)
    key_id: Mapped[int] = mapped_column(ForeignKey("metric_key.id"), primary_key=True)
    width: Mapped[int] = mapped_column(primary_key=True)
    bucket: Mapped[int] = mapped_column(primary_key=True)
    n: Mapped[int] = mapped_column(Integer)
    sum_step: Mapped[int] = mapped_column(BigInteger)
    sum_value: Mapped[float] = mapped_column(Float)
    min_value: Mapped[float] = mapped_column(Float)
    max_value: Mapped[float] = mapped_column(Float)


class IngestedFile(Base):
    __tablename__ = "ingested_file"

    id: Mapped[int] = mapped_column(primary_key=True)
    sha256: Mapped[str] = mapped_column(String(64), unique=True)
    path: Mapped[str] = mapped_column(String(1000))
    format: Mapped[str] = mapped_column(String(60))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    records: Mapped[int] = mapped_column(Integer, default=0)
    ingested_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    ingested_by: Mapped[str | None] = mapped_column(String(200))  # None: stored before 0009


class Benchmark(Base):
    """A measurement: checkpoint None and speculative_algorithm None make a no-speculation baseline."""

    __tablename__ = "benchmark"
    __table_args__ = (
        Index(None, "deployment_id", "concurrency"),
        Index(None, "checkpoint_id", "deployment_id"),
        # the baselines (speculative_algorithm NULL) of a deployment, read by every refresh
        Index("ix_benchmark_baselines", "speculative_algorithm", "deployment_id", "concurrency"),
        # the stated contexts of a deployment (db/refresh_context.reference_contexts, every refresh), read
        # from the index alone: benchmarks that state none are left out of it
        Index(
            "ix_benchmark_contexts",
            "deployment_id",
            "input_tokens",
            "output_tokens",
            "superseded_by_id",
            sqlite_where=literal_column("input_tokens IS NOT NULL"),
            postgresql_where=literal_column("input_tokens IS NOT NULL"),
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    record_key: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 of the canonical record
    checkpoint_id: Mapped[int | None] = mapped_column(ForeignKey("checkpoint.id", ondelete="CASCADE"))
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"))
    engine: Mapped[str | None] = mapped_column(String(40))
    speculative_algorithm: Mapped[str | None] = mapped_column(String(40))
    num_steps: Mapped[int | None]
    topk: Mapped[int | None]
    num_draft_tokens: Mapped[int | None]
    concurrency: Mapped[int] = mapped_column(Integer, default=1)
    # one of ingest/records.py's ConcurrencySource values; None: stored before it was recorded
    concurrency_source: Mapped[str | None] = mapped_column(String(40))
    dataset: Mapped[str | None] = mapped_column(String(200))
    num_prompts: Mapped[int | None]
    input_tokens: Mapped[float | None] = mapped_column(Float)  # mean prompt tokens per request
    output_tokens: Mapped[float | None] = mapped_column(Float)  # mean output tokens per request
    decode_tps: Mapped[float] = mapped_column(Float)  # per request, tokens/s
    output_throughput: Mapped[float | None] = mapped_column(Float)  # aggregate over the server, tokens/s
    accept_length: Mapped[float | None] = mapped_column(Float)  # tokens per round incl. the bonus token
    median_tpot_ms: Mapped[float | None] = mapped_column(Float)
    median_ttft_ms: Mapped[float | None] = mapped_column(Float)
    median_itl_ms: Mapped[float | None] = mapped_column(Float)
    p99_tpot_ms: Mapped[float | None] = mapped_column(Float)
    p99_ttft_ms: Mapped[float | None] = mapped_column(Float)
    p99_itl_ms: Mapped[float | None] = mapped_column(Float)
    request_rate: Mapped[float | None] = mapped_column(Float)  # requests/s; inf: all sent at once
    # Spread of per-request decode tok/s over the intervals of a server log the benchmark summarises.
    decode_tps_p10: Mapped[float | None] = mapped_column(Float)
    decode_tps_p90: Mapped[float | None] = mapped_column(Float)
    interval_count: Mapped[int | None]
    # measured share of rounds whose first k drafts were all accepted, k = 1, 2, ...
    position_survival: Mapped[list[Any] | None] = mapped_column(JSON(none_as_null=True))
    engine_version: Mapped[str | None] = mapped_column(String(40))
    drafter_path: Mapped[str | None] = mapped_column(String(1000))
    draft_hidden_size: Mapped[int | None]  # feature width the server fed the drafter, when known
    label: Mapped[str | None] = mapped_column(String(200))
    source_format: Mapped[str] = mapped_column(String(60), default="specdash")
    ingested_file_id: Mapped[int | None] = mapped_column(ForeignKey("ingested_file.id", ondelete="SET NULL"))
    superseded_by_id: Mapped[int | None] = mapped_column(ForeignKey("benchmark.id", ondelete="SET NULL"))
    raw: Mapped[dict[str, Any] | None]
    measured_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    checkpoint: Mapped[Checkpoint | None] = relationship()
    deployment: Mapped[Deployment] = relationship()


# a benchmark's Setting (its columns are the value object's fields), the load and the dataset it ran
BENCHMARK_SETTING = (
    *(getattr(Benchmark, field.name) for field in fields(domain.Setting)),
    Benchmark.concurrency,
    Benchmark.dataset,
)
SETTING_FIELDS = tuple(column.key for column in BENCHMARK_SETTING)  # their names in rows and exports


class Prediction(Base):
    """Predicted throughput of a checkpoint on a deployment at one speculation setting and concurrency."""

    __tablename__ = "prediction"
    __table_args__ = (
        UniqueConstraint(
            "checkpoint_id",
            "deployment_id",
            "num_steps",
            "topk",
            "num_draft_tokens",
            "concurrency",
            "dataset",
            "source",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    checkpoint_id: Mapped[int] = mapped_column(ForeignKey("checkpoint.id", ondelete="CASCADE"))
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"), index=True)
    num_steps: Mapped[int]
    topk: Mapped[int] = mapped_column(Integer, default=1)
    num_draft_tokens: Mapped[int]
    concurrency: Mapped[int] = mapped_column(Integer, default=1)
    dataset: Mapped[str] = mapped_column(String(200), default="")  # "" when not dataset-specific
    source: Mapped[str] = mapped_column(String(100))  # theory | calibrated | an external name
    parameter_set_id: Mapped[int | None] = mapped_column(ForeignKey("parameter_set.id", ondelete="SET NULL"))
    predicted_tps: Mapped[float] = mapped_column(Float)
    accept_length: Mapped[float | None] = mapped_column(Float)
    accept_length_source: Mapped[str | None] = mapped_column(String(40))  # training | measured | external
    round_ms: Mapped[float | None] = mapped_column(Float)
    compute_ms: Mapped[float | None] = mapped_column(Float)
    comm_ms: Mapped[float | None] = mapped_column(Float)
    draft_ms: Mapped[float | None] = mapped_column(Float)
    overhead_ms: Mapped[float | None] = mapped_column(Float)
    baseline_tps: Mapped[float | None] = mapped_column(Float)
    # estimated from the deployment's speculative benchmarks (costmodel/estimated.py): none ran without
    baseline_estimated: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    extrapolated: Mapped[bool] = mapped_column(Boolean, default=False)
    approximation: Mapped[str | None] = mapped_column(String(200))
    # expected |measured / predicted - 1| at 90 % coverage (costmodel.uncertainty); None for external ones
    error_band: Mapped[float | None] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    checkpoint: Mapped[Checkpoint] = relationship()
    deployment: Mapped[Deployment] = relationship()
    parameter_set: Mapped[ParameterSet | None] = relationship()


# The sources stored, found in a few index steps (db/queries.py prediction_sources; revision 0013). On the
# expression `source || ''`, not the column: a query filtering on `source = ...` never uses it, so the
# planner keeps driving the parity and gap queries from the gap indexes, as it does without it.
SOURCE_KEY = Prediction.source.op("||")(literal_column("''"))
Index("ix_prediction_source_key", SOURCE_KEY)


class Gap(Base):
    """A benchmark compared with a prediction; above the threshold it is an alert with a status."""

    __tablename__ = "gap"
    __table_args__ = (UniqueConstraint("benchmark_id", "prediction_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmark.id", ondelete="CASCADE"))
    prediction_id: Mapped[int] = mapped_column(ForeignKey("prediction.id", ondelete="CASCADE"), index=True)
    gap: Mapped[float] = mapped_column(Float, index=True)  # 1 - measured / predicted
    measured_tps: Mapped[float] = mapped_column(Float)
    predicted_tps: Mapped[float] = mapped_column(Float)
    measured_round_ms: Mapped[float | None] = mapped_column(Float)
    predicted_round_ms: Mapped[float | None] = mapped_column(Float)
    acceptance_factor: Mapped[float | None] = mapped_column(Float)
    round_factor: Mapped[float | None] = mapped_column(Float)
    unexplained_ms: Mapped[float | None] = mapped_column(Float)
    diagnoses: Mapped[list[Any]] = mapped_column(JSON, default=list)
    severity: Mapped[str | None] = mapped_column(String(20))  # worst diagnosis: critical | warning | info
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    benchmark: Mapped[Benchmark] = relationship()
    prediction: Mapped[Prediction] = relationship()


class Alert(Base):
    """One benchmark's verdict and its investigation: the gap it is judged on (the best prediction that
    covers it), whether that is an alert, why, and the status and note people give it. Its id is the
    benchmark's id, so the dashboard, the CLI and the benchmark tables name it alike."""

    __tablename__ = "alert"
    # the Overview's open-alert counts by severity, muted ones found by their code (revision 0012)
    __table_args__ = (Index("ix_alert_open_counts", "status", "is_alert", "severity", "code"),)

    benchmark_id: Mapped[int] = mapped_column(
        ForeignKey("benchmark.id", ondelete="CASCADE"), primary_key=True, autoincrement=False
    )
    gap_id: Mapped[int | None] = mapped_column(ForeignKey("gap.id", ondelete="SET NULL"), index=True)
    is_alert: Mapped[bool] = mapped_column(Boolean, default=False, index=True)
    severity: Mapped[str | None] = mapped_column(String(20))  # of the verdict: critical | warning | info
    code: Mapped[str | None] = mapped_column(String(60))  # the leading diagnosis (what a mute matches)
    reason: Mapped[str | None] = mapped_column(Text)  # why the benchmark is, or is not, an alert
    status: Mapped[str] = mapped_column(String(20), default="open", index=True)
    note: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)

    benchmark: Mapped[Benchmark] = relationship()
    gap: Mapped[Gap | None] = relationship()
    events: Mapped[list["AlertEvent"]] = relationship(order_by="AlertEvent.id", cascade="all, delete-orphan")


class AlertEvent(Base):
    """Who (or which refresh) changed an alert's status or note, and when."""

    __tablename__ = "alert_event"

    id: Mapped[int] = mapped_column(primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(
        ForeignKey("alert.benchmark_id", ondelete="CASCADE"), index=True
    )
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    who: Mapped[str | None] = mapped_column(String(200))
    from_status: Mapped[str | None] = mapped_column(String(20))
    to_status: Mapped[str] = mapped_column(String(20))
    note: Mapped[str | None] = mapped_column(Text)


class Change(Base):
    """A stored value someone changed: a file's values applied over stored ones (`ingest --update`), an
    ingest replaced (`--replace`) or removed, a profile, threshold or calibration saved, runs archived or
    deleted. Who (the login name on the command line, the signed-in user on the dashboard), when, what,
    and the values before and after."""

    __tablename__ = "change"

    id: Mapped[int] = mapped_column(primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    who: Mapped[str | None] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(40))  # ingest --update, ingest --replace, settings, runs ...
    kind: Mapped[str] = mapped_column(String(40))  # what changed: deployment, run, prediction, setting ...
    subject: Mapped[str] = mapped_column(String(300))  # its name
    field: Mapped[str | None] = mapped_column(String(100))
    old_value: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)
    new_value: Mapped[Any] = mapped_column(JSON(none_as_null=True), nullable=True)
    note: Mapped[str | None] = mapped_column(Text)


class AlertMute(Base):
    """A diagnosis muted on a deployment, with who and why; lifting it keeps the row (lifted_at)."""

    __tablename__ = "alert_mute"
    __table_args__ = (Index(None, "deployment_id", "diagnosis"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    deployment_id: Mapped[int] = mapped_column(ForeignKey("deployment.id", ondelete="CASCADE"))
    diagnosis: Mapped[str] = mapped_column(String(60))
    reason: Mapped[str] = mapped_column(Text)
    who: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    lifted_at: Mapped[datetime | None] = mapped_column(DateTime)
    lifted_by: Mapped[str | None] = mapped_column(String(200))


class Setting(Base):
    __tablename__ = "setting"

    key: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
