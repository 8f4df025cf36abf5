"""Read queries shared by the CLI and the dashboard; they return plain rows or DataFrames, never ORM state."""

from typing import Any

import pandas as pd
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session, aliased

from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    IngestedFile,
    MetricPoint,
    Prediction,
    Run,
)
from specdash.db.settings import get_gap_threshold


def counts(session: Session) -> dict[str, int]:
    def n(model) -> int:
        return session.scalar(select(func.count()).select_from(model)) or 0

    return {
        "deployments": n(Deployment),
        "runs": n(Run),
        "checkpoints": n(Checkpoint),
        "benchmarks": n(Benchmark),
        "predictions": n(Prediction),
        "metric_points": n(MetricPoint),
        "files": n(IngestedFile),
    }


def is_empty(session: Session) -> bool:
    return not session.scalar(select(func.count()).select_from(Run)) and not session.scalar(
        select(func.count()).select_from(Benchmark)
    )


def _gap_select(threshold: float | None, global_threshold: float) -> Select:
    limit = (
        threshold
        if threshold is not None
        else func.coalesce(Deployment.gap_threshold, global_threshold)
    )
    return (
        select(
            Gap.id.label("gap_id"),
            Gap.benchmark_id,
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Deployment.name.label("deployment"),
            Prediction.source,
            Prediction.parameter_set_id,
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.dataset,
            Benchmark.label,
            Gap.measured_tps,
            Gap.predicted_tps,
            Gap.gap,
            Benchmark.accept_length.label("measured_accept_length"),
            Prediction.accept_length.label("predicted_accept_length"),
            Prediction.extrapolated,
            Gap.measured_round_ms,
            Gap.predicted_round_ms,
            Gap.acceptance_factor,
            Gap.round_factor,
            Gap.unexplained_ms,
            Gap.severity,
            Gap.status,
            Gap.note,
            Gap.diagnoses,
            func.coalesce(Deployment.gap_threshold, global_threshold).label("threshold"),
        )
        .join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Run, Checkpoint.run_id == Run.id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(func.abs(Gap.gap) >= limit)
    )


def gap_rows(
    session: Session,
    threshold: float | None = None,
    status: str = "open",
    source: str | None = None,
) -> list[dict[str, Any]]:
    """Gaps at or above the threshold (each deployment's own, else the global one), largest first."""
    query = _gap_select(threshold, get_gap_threshold(session))
    if status != "all":
        query = query.where(Gap.status == status)
    if source:
        query = query.where(Prediction.source == source)
    query = query.order_by(func.abs(Gap.gap).desc(), Gap.id)
    return [dict(row) for row in session.execute(query).mappings()]


def parity_frame(session: Session, source: str = "theory") -> pd.DataFrame:
    """One row per benchmark with its prediction: the parity plot's data."""
    query = (
        select(
            Benchmark.id.label("benchmark_id"),
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Deployment.name.label("deployment"),
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Gap.measured_tps,
            Gap.predicted_tps,
            Gap.gap,
            Gap.status,
            Gap.severity,
        )
        .join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Run, Checkpoint.run_id == Run.id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(Prediction.source == source)
        .order_by(Benchmark.id)
    )
    return pd.DataFrame(session.execute(query).mappings().all())


def runs_frame(session: Session) -> pd.DataFrame:
    checkpoints = (
        select(Checkpoint.run_id, func.count().label("checkpoints"))
        .group_by(Checkpoint.run_id)
        .subquery()
    )
    query = (
        select(
            Run.id,
            Run.name,
            Run.framework,
            Run.target_model,
            Run.ttt_length,
            Run.status,
            Run.is_demo,
            func.coalesce(checkpoints.c.checkpoints, 0).label("checkpoints"),
        )
        .outerjoin(checkpoints, checkpoints.c.run_id == Run.id)
        .order_by(Run.name)
    )
    return pd.DataFrame(session.execute(query).mappings().all())


def deployments_frame(session: Session) -> pd.DataFrame:
    query = select(
        Deployment.id,
        Deployment.name,
        Deployment.interconnect,
        Deployment.tp_size,
        Deployment.baseline_tps,
        Deployment.comm_fraction,
        Deployment.draft_step_ms,
        Deployment.is_demo,
    ).order_by(Deployment.name)
    return pd.DataFrame(session.execute(query).mappings().all())


def checkpoint_overlay(session: Session, run_id: int, deployment_id: int | None = None) -> pd.DataFrame:
    """Measured and predicted tok/s and tau per checkpoint and setting of one run (one row a benchmark
    and prediction source)."""
    pred = aliased(Prediction)
    query = (
        select(
            Checkpoint.id.label("checkpoint_id"),
            Checkpoint.name.label("checkpoint"),
            Checkpoint.step,
            Checkpoint.epoch,
            Deployment.name.label("deployment"),
            Benchmark.id.label("benchmark_id"),
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.decode_tps.label("measured_tps"),
            Benchmark.accept_length.label("measured_accept_length"),
            pred.source,
            pred.predicted_tps,
            pred.accept_length.label("predicted_accept_length"),
            pred.extrapolated,
            Gap.gap,
        )
        .join(Benchmark, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(Gap, Gap.benchmark_id == Benchmark.id)
        .outerjoin(pred, Gap.prediction_id == pred.id)
        .where(Checkpoint.run_id == run_id)
        .order_by(Checkpoint.step, Checkpoint.name, Benchmark.num_steps, Benchmark.id)
    )
    if deployment_id is not None:
        query = query.where(Benchmark.deployment_id == deployment_id)
    return pd.DataFrame(session.execute(query).mappings().all())
