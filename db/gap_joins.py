"""The joins every gap and verdict query shares: a gap (or an alert) with its benchmark, the benchmark's
alert, the prediction, and the checkpoint, run and deployment they are about; the columns a gap is shown
with; whether an alert's leading diagnosis is muted."""

from sqlalchemy import Exists, Select, exists

from specdash.db.bulk import Column
from specdash.db.models import (
    BENCHMARK_SETTING,
    Alert,
    AlertMute,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    Prediction,
    Run,
)

# What a benchmark, gap or prediction is about, by name.
NAMES: tuple[Column, ...] = (
    Run.name.label("run"),
    Checkpoint.name.label("checkpoint"),
    Deployment.name.label("deployment"),
)
# A gap with what it is about: run, checkpoint, deployment, setting, prediction, and its decomposition.
GAP_DETAIL_COLUMNS: tuple[Column, ...] = (
    *NAMES,
    Prediction.source,
    Prediction.parameter_set_id,
    *BENCHMARK_SETTING,
    Benchmark.label,
    Gap.measured_tps,
    Gap.predicted_tps,
    Gap.gap,
    Benchmark.accept_length.label("measured_accept_length"),
    Prediction.accept_length.label("predicted_accept_length"),
    Prediction.extrapolated,
    Prediction.error_band,
    Gap.measured_round_ms,
    Gap.predicted_round_ms,
    Gap.acceptance_factor,
    Gap.round_factor,
    Gap.unexplained_ms,
)


def with_gap_joins(query: Select) -> Select:
    """`query` over gaps, joined to each gap's benchmark, the benchmark's alert (when it has one), the
    gap's prediction, and the benchmark's checkpoint, run and deployment."""
    return (
        query.join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .outerjoin(Alert, Alert.benchmark_id == Gap.benchmark_id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Checkpoint.run)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
    )


def with_verdict_joins(query: Select) -> Select:
    """`query` over alerts (verdicts), joined to each alert's benchmark, its checkpoint, run and deployment,
    and the gap it is judged on with that gap's prediction (none while the gap is gone)."""
    return (
        query.select_from(Alert)
        .join(Benchmark, Alert.benchmark_id == Benchmark.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Checkpoint.run)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(Gap, Alert.gap_id == Gap.id)
        .outerjoin(Prediction, Gap.prediction_id == Prediction.id)
    )


def muted_clause() -> Exists:
    """SQL: the alert's leading diagnosis is muted on its benchmark's deployment."""
    return exists().where(
        AlertMute.deployment_id == Benchmark.deployment_id,
        AlertMute.diagnosis == Alert.code,
        AlertMute.lifted_at.is_(None),
    )
