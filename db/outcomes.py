"""What became of some benchmarks (those an upload stored): each with every source's prediction and its gap,
and which of them judges it."""

from typing import Any, NamedTuple

from sqlalchemy import and_, case, select
from sqlalchemy.orm import Session

from specdash.db.gap_joins import NAMES
from specdash.db.models import (
    BENCHMARK_SETTING,
    Alert,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    Prediction,
)
from specdash.db.rows import rows_of


class BenchmarkOutcome(NamedTuple):
    """One benchmark with one source's prediction and the gap (None where it has none); `verdict` and
    `is_alert` are true on the row of the prediction that judges it."""

    benchmark_id: int
    run: str | None
    checkpoint: str | None
    deployment: str
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    measured_tps: float
    measured_accept_length: float | None
    source: str | None
    predicted_tps: float | None
    predicted_accept_length: float | None
    gap_id: int | None
    gap: float | None
    alert_id: int | None
    verdict: bool
    is_alert: bool
    severity: str | None
    reason: str | None
    diagnoses: Any


def benchmark_outcomes(session: Session, benchmark_ids: list[int]) -> list[BenchmarkOutcome]:
    """What became of some benchmarks (e.g. those an upload created): each with its prediction from every
    source and the gap; the row of the prediction that judges it says whether it is an alert and why."""
    if not benchmark_ids:
        return []
    query = (
        select(
            Benchmark.id.label("benchmark_id"),
            *NAMES,
            *BENCHMARK_SETTING,
            Benchmark.decode_tps.label("measured_tps"),
            Benchmark.accept_length.label("measured_accept_length"),
            Prediction.source,
            Prediction.predicted_tps,
            Prediction.accept_length.label("predicted_accept_length"),
            Gap.id.label("gap_id"),
            Gap.gap,
            Alert.benchmark_id.label("alert_id"),
            (Alert.gap_id == Gap.id).label("verdict"),
            and_(Alert.gap_id == Gap.id, Alert.is_alert).label("is_alert"),
            case((Alert.gap_id == Gap.id, Alert.severity), else_=Gap.severity).label("severity"),
            case((Alert.gap_id == Gap.id, Alert.reason), else_=None).label("reason"),
            Gap.diagnoses,
        )
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Checkpoint.run)
        .outerjoin(Gap, Gap.benchmark_id == Benchmark.id)
        .outerjoin(Prediction, Gap.prediction_id == Prediction.id)
        .outerjoin(Alert, Alert.benchmark_id == Benchmark.id)
        .where(Benchmark.id.in_(benchmark_ids))
        .order_by(Benchmark.id, Prediction.source)
    )
    # a benchmark without an alert (or a gap) has no verdict: false, not unknown
    return [
        row._replace(verdict=bool(row.verdict), is_alert=bool(row.is_alert))
        for row in rows_of(session, query, BenchmarkOutcome)
    ]
