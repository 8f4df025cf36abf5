"""What the Live page reads: the deployments and drafters `specdash scrape` has stored windows of, and one
drafter's windows over time beside what its judging prediction expected."""

from datetime import datetime
from typing import Any

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.db.acceptance_alerts import LIVE_FORMAT
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run

# At most this many windows are drawn (the latest): a day at one window a minute.
MAX_WINDOWS = 1440
SERIES_COLUMNS = (
    "benchmark_id",
    "measured_at",
    "accept_length",
    "predicted_accept_length",
    "decode_tps",
    "predicted_tps",
    "output_throughput",
    "concurrency",
    "input_tokens",
    "output_tokens",
    "position_survival",
    "engine",
    "is_alert",
    "severity",
    "code",
    "acceptance",
)


def live_targets(session: Session) -> list[dict[str, Any]]:
    """Each (deployment, drafter) with live windows: names, ids, how many windows and the latest's time,
    the most recent first."""
    query = (
        select(
            Deployment.id.label("deployment_id"),
            Deployment.name.label("deployment"),
            Benchmark.checkpoint_id,
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            func.count().label("windows"),
            func.max(Benchmark.measured_at).label("latest"),
            func.max(Benchmark.created_at).label("stored"),
        )
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Run, Checkpoint.run_id == Run.id)
        .where(Benchmark.source_format == LIVE_FORMAT)
        .group_by(Deployment.id, Deployment.name, Benchmark.checkpoint_id, Run.name, Checkpoint.name)
        .order_by(func.max(Benchmark.created_at).desc())
    )
    return [dict(row) for row in session.execute(query).mappings()]


def live_series(session: Session, deployment_id: int, checkpoint_id: int | None) -> pd.DataFrame:
    """One drafter's live windows on one deployment, oldest first: what each measured, what its verdict's
    prediction expected (accept length and per-request tok/s), and its acceptance state."""
    checkpoint = (
        Benchmark.checkpoint_id.is_(None)
        if checkpoint_id is None
        else Benchmark.checkpoint_id == checkpoint_id
    )
    query = (
        select(
            Benchmark.id.label("benchmark_id"),
            Benchmark.measured_at,
            Benchmark.accept_length,
            Prediction.accept_length.label("predicted_accept_length"),
            Benchmark.decode_tps,
            Gap.predicted_tps,
            Benchmark.output_throughput,
            Benchmark.concurrency,
            Benchmark.input_tokens,
            Benchmark.output_tokens,
            Benchmark.position_survival,
            Benchmark.engine,
            Alert.is_alert,
            Alert.severity,
            Alert.code,
            Benchmark.raw,
        )
        .outerjoin(Alert, Alert.benchmark_id == Benchmark.id)
        .outerjoin(Gap, Alert.gap_id == Gap.id)
        .outerjoin(Prediction, Gap.prediction_id == Prediction.id)
        .where(Benchmark.source_format == LIVE_FORMAT, Benchmark.deployment_id == deployment_id, checkpoint)
        .order_by(Benchmark.measured_at.desc(), Benchmark.id.desc())
        .limit(MAX_WINDOWS)
    )
    rows = []
    for row in session.execute(query).mappings():
        values = dict(row)
        raw = values.pop("raw") or {}
        values["acceptance"] = (raw.get("acceptance") or {}).get("change")
        rows.append(values)
    return pd.DataFrame(rows[::-1], columns=list(SERIES_COLUMNS))


def last_window_at(session: Session) -> datetime | None:
    """When the latest live window was stored (a scraper is probably running if that was recent)."""
    return session.scalar(
        select(func.max(Benchmark.created_at)).where(Benchmark.source_format == LIVE_FORMAT)
    )
