"""What the Live page reads: the deployments and drafters `specdash scrape` has stored windows of, and one
drafter's windows over time beside what its judging prediction expected."""

from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.db.acceptance_alerts import LIVE_FORMAT
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run
from specdash.db.rows import rows_of

# At most this many windows are drawn (the latest): a day at one window a minute.
MAX_WINDOWS = 1440


class LiveWindow(NamedTuple):
    """One live window of a drafter: what it measured, what its verdict's prediction expected (accept
    length and per-request tok/s), its alert state, and how its acceptance changed (None: not stated)."""

    benchmark_id: int
    measured_at: datetime | None
    accept_length: float | None
    predicted_accept_length: float | None
    decode_tps: float
    predicted_tps: float | None
    output_throughput: float | None
    concurrency: int
    input_tokens: int | None
    output_tokens: int | None
    position_survival: Any
    engine: str | None
    is_alert: bool | None
    severity: str | None
    code: str | None
    acceptance: str | None


class LiveTarget(NamedTuple):
    """A (deployment, drafter) with live windows: how many, when the latest was measured and stored."""

    deployment_id: int
    deployment: str
    checkpoint_id: int | None
    run: str | None
    checkpoint: str | None
    windows: int
    latest: datetime | None
    stored: datetime | None


def live_targets(session: Session) -> list[LiveTarget]:
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
        .outerjoin(Checkpoint.run)
        .where(Benchmark.source_format == LIVE_FORMAT)
        .group_by(Deployment.id, Deployment.name, Benchmark.checkpoint_id, Run.name, Checkpoint.name)
        .order_by(func.max(Benchmark.created_at).desc())
    )
    return rows_of(session, query, LiveTarget)


def live_series(session: Session, deployment_id: int, checkpoint_id: int | None) -> list[LiveWindow]:
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
    windows = [
        LiveWindow._make((*window, _acceptance_change(raw)))
        for *window, raw in session.connection().execute(query)
    ]
    return windows[::-1]


def _acceptance_change(raw: dict[str, Any] | None) -> str | None:
    """How the window's acceptance changed, as the scraper stored it in the window's raw record."""
    return ((raw or {}).get("acceptance") or {}).get("change")


def last_window_at(session: Session) -> datetime | None:
    """When the latest live window was stored (a scraper is probably running if that was recent)."""
    return session.scalar(
        select(func.max(Benchmark.created_at)).where(Benchmark.source_format == LIVE_FORMAT)
    )
