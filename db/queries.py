"""Read queries shared by the CLI and the dashboard; they return typed rows, never ORM state or DataFrames."""

from functools import cache
from typing import Any, NamedTuple

from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import GapStatus, PredictionSource
from specdash.db.gap_joins import GAP_DETAIL_COLUMNS, muted_clause, with_gap_joins
from specdash.db.models import (
    BUILTIN_SOURCES,
    SOURCE_KEY,
    Alert,
    AlertMute,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    Prediction,
    Run,
)
from specdash.db.rows import rows_of
from specdash.db.settings import get_gap_threshold, is_alert_sql, threshold_sql
from specdash.db.summary_models import RunCheckpoints

# What the Overview counts, one scalar subquery each in one statement built once (four statements built per
# render cost more than counting).
_COUNTED_MODELS = {"deployments": Deployment, "runs": Run, "checkpoints": Checkpoint, "benchmarks": Benchmark}
_COUNTS = select(
    *(select(func.count()).select_from(model).scalar_subquery() for model in _COUNTED_MODELS.values())
)


def counts(session: Session) -> dict[str, int]:
    """What the Overview counts (not metric points: counting a million rows costs more than the page)."""
    row = session.connection().execute(_COUNTS).one()
    return {name: n or 0 for name, n in zip(_COUNTED_MODELS, row, strict=True)}


def store_version(session: Session) -> tuple:
    """A cheap fingerprint of what is stored (maxima of indexed columns and tiny tables): it changes with
    every ingest, refresh, calibration, status change, mute and setting, and every change in the change
    history (a value --update replaced, run tags, an archive), whoever wrote them. Benchmarks are not
    counted (PostgreSQL scans a table to count it, 35-170 ms at 400,000, and an open page asks every few
    seconds): each way of deleting them (a run deleted, an ingest undone or replaced) is in the history."""
    from specdash.db.models import AlertEvent, AlertMute, Change, IngestedFile, ParameterSet, Setting

    row = session.execute(
        select(
            select(func.max(IngestedFile.id)).scalar_subquery(),
            select(func.max(Benchmark.id)).scalar_subquery(),
            select(func.max(Alert.updated_at)).scalar_subquery(),
            select(func.max(AlertEvent.id)).scalar_subquery(),
            select(func.max(ParameterSet.id)).scalar_subquery(),
            select(func.count())
            .select_from(ParameterSet)
            .where(ParameterSet.is_active.is_(True))
            .scalar_subquery(),
            select(func.count()).select_from(AlertMute).scalar_subquery(),
            select(func.count())
            .select_from(AlertMute)
            .where(AlertMute.lifted_at.is_(None))
            .scalar_subquery(),
            select(func.max(Run.id)).scalar_subquery(),
            select(func.max(Deployment.id)).scalar_subquery(),
            select(func.max(Change.id)).scalar_subquery(),
        )
    ).one()
    settings = tuple(session.execute(select(Setting.key, Setting.value).order_by(Setting.key)).all())
    return (*row, settings)


def is_empty(session: Session) -> bool:
    return not session.scalar(select(func.count()).select_from(Run)) and not session.scalar(
        select(func.count()).select_from(Benchmark)
    )


def gap_select(threshold: float | None, global_threshold: float) -> Select:
    """Gaps (every prediction source: analysis) with their run, checkpoint, deployment and prediction, at or
    above `threshold` (None: each deployment's own threshold, else the global one), with the status of the
    benchmark's alert (alert_id is the benchmark id) and whether this gap is the one it is judged on."""
    limit = threshold if threshold is not None else threshold_sql(global_threshold)
    return with_gap_joins(
        select(
            Gap.id.label("gap_id"),
            Gap.benchmark_id,
            *GAP_DETAIL_COLUMNS,
            Gap.severity,
            func.coalesce(Alert.status, GapStatus.OPEN).label("status"),
            Alert.note,
            Gap.diagnoses,
            threshold_sql(global_threshold).label("threshold"),
            Alert.benchmark_id.label("alert_id"),
            func.coalesce(Alert.gap_id == Gap.id, False).label("verdict"),
            func.coalesce(Alert.is_alert, False).label("is_alert"),
        )
    ).where(is_alert_sql(limit))


class GapDetail(NamedTuple):
    """A gap with what it is about (run, checkpoint, deployment, setting, prediction), its decomposition,
    and its benchmark's alert: status, note, whether this gap is the one judged (`verdict`) and raised."""

    gap_id: int
    benchmark_id: int
    run: str
    checkpoint: str
    deployment: str
    source: str
    parameter_set_id: int | None
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    label: str | None
    measured_tps: float
    predicted_tps: float
    gap: float
    measured_accept_length: float | None
    predicted_accept_length: float | None
    extrapolated: bool
    error_band: float | None
    measured_round_ms: float | None
    predicted_round_ms: float | None
    acceptance_factor: float | None
    round_factor: float | None
    unexplained_ms: float | None
    severity: str | None
    status: str
    note: str | None
    diagnoses: list[Any]
    threshold: float
    alert_id: int | None
    verdict: bool
    is_alert: bool


def gap_rows(
    session: Session,
    threshold: float | None = None,
    status: str = GapStatus.OPEN,
    source: str | None = None,
) -> list[GapDetail]:
    """Gaps at or above the threshold (each deployment's own, else the global one), largest first."""
    query = gap_select(threshold, get_gap_threshold(session))
    if status != "all":
        query = query.where(func.coalesce(Alert.status, GapStatus.OPEN) == status)
    if source:
        query = query.where(Prediction.source == source)
    query = query.order_by(func.abs(Gap.gap).desc(), Gap.id)
    return rows_of(session, query, GapDetail)


# open_alert_counts' statements, built once (the Overview asks on every render): every open alert by
# severity, from the index ix_alert_open_counts alone, with whether some mute is active (one uncorrelated
# test, asked in the same statement); and the muted ones by severity, found among those whose leading
# diagnosis (code) an active mute names, which alone need their benchmark's deployment
_RAISED = (Alert.status == GapStatus.OPEN, Alert.is_alert.is_(True))
_MUTED_CODES = select(AlertMute.diagnosis).where(AlertMute.lifted_at.is_(None))
_OPEN_BY_SEVERITY = (
    select(Alert.severity, func.count(), _MUTED_CODES.exists().label("some_muted"))
    .where(*_RAISED)
    .group_by(Alert.severity)
)
_MUTED_BY_SEVERITY = (
    select(Alert.severity, func.count())
    .join(Benchmark, Alert.benchmark_id == Benchmark.id)
    .where(*_RAISED, Alert.code.in_(_MUTED_CODES.scalar_subquery()), muted_clause())
    .group_by(Alert.severity)
)


def open_alert_counts(session: Session) -> dict[str, int]:
    """Open alerts (raised verdicts, muted ones left out) by severity; "none" for one without a severity.
    Every open alert is counted, then the muted ones are taken off."""
    connection = session.connection()
    counts = {}
    some_muted = False
    for severity, n, muted in connection.execute(_OPEN_BY_SEVERITY):
        counts[severity] = n
        some_muted = some_muted or bool(muted)
    if some_muted:
        for severity, n in connection.execute(_MUTED_BY_SEVERITY):
            counts[severity] -= n
    return {severity or "none": n for severity, n in counts.items() if n}


def _stored_sources():
    """The stored sources walked on the index ix_prediction_source_key (the next source after each, a
    recursive CTE ending in a NULL): a few index steps per source where DISTINCT read every prediction."""
    after = select(func.min(SOURCE_KEY)).scalar_subquery()
    walk = select(after.label("name")).cte("sources", recursive=True)
    following = select(func.min(SOURCE_KEY)).where(SOURCE_KEY > walk.c.name).scalar_subquery()
    return walk.union_all(select(following).where(walk.c.name.is_not(None)))


# The stored sources, each with whether one of its predictions has a gap: built once (the Overview asks on
# every render), one statement however many sources
_SOURCES = _stored_sources()
_JUDGED_SOURCES = select(
    _SOURCES.c.name,
    select(Gap.id)
    .join(Prediction, Gap.prediction_id == Prediction.id)
    .where(SOURCE_KEY == _SOURCES.c.name)
    .exists()
    .label("judged"),
)


def prediction_sources(session: Session) -> list[str]:
    """Prediction sources that have gaps: theory and calibrated first, then external names. Each stored
    source is kept when one of its predictions has a gap."""
    names = {name for name, judged in session.connection().execute(_JUDGED_SOURCES) if judged}
    builtin = [name for name in BUILTIN_SOURCES if name in names]
    return builtin + sorted(names - set(builtin))


def plain(rows) -> list[tuple]:
    """Rows as plain tuples: pandas asks each row whether it is a named tuple, and a SQLAlchemy Row
    answers that through a failed key lookup (at 4,000 rows that cost more than the query)."""
    return [tuple(row) for row in rows]


class RunSummary(NamedTuple):
    """A run with how many checkpoints it has."""

    id: int
    name: str
    framework: str | None
    target_model: str | None
    ttt_length: int | None
    status: str | None
    is_demo: bool
    checkpoints: int


def run_summaries(session: Session, include_archived: bool = False) -> list[RunSummary]:
    """Runs with their number of checkpoints; archived runs (Runs page) left out unless asked for."""
    checkpoints = (
        select(Checkpoint.run_id, func.count().label("checkpoints")).group_by(Checkpoint.run_id).subquery()
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
    if not include_archived:
        query = query.where(Run.archived_at.is_(None))
    return rows_of(session, query, RunSummary)


class DeploymentSummary(NamedTuple):
    """A deployment with its cost profile, own gap threshold and how many benchmarks it has."""

    id: int
    name: str
    gpu: str | None
    num_gpus: int | None
    tp_size: int | None
    interconnect: str | None
    engine: str | None
    target_model: str | None
    baseline_tps: float | None
    comm_fraction: float | None
    draft_step_ms: float | None
    round_overhead_ms: float | None
    verify_growth_compute: float | None
    verify_growth_comm: float | None
    gap_threshold: float | None
    is_demo: bool
    benchmarks: int


def deployment_summaries(session: Session) -> list[DeploymentSummary]:
    """Every deployment with its cost profile, own threshold and number of benchmarks."""
    benchmarks = (
        select(Benchmark.deployment_id, func.count().label("benchmarks"))
        .group_by(Benchmark.deployment_id)
        .subquery()
    )
    query = (
        select(
            Deployment.id,
            Deployment.name,
            Deployment.gpu,
            Deployment.num_gpus,
            Deployment.tp_size,
            Deployment.interconnect,
            Deployment.engine,
            Deployment.target_model,
            Deployment.baseline_tps,
            Deployment.comm_fraction,
            Deployment.draft_step_ms,
            Deployment.round_overhead_ms,
            Deployment.verify_growth_compute,
            Deployment.verify_growth_comm,
            Deployment.gap_threshold,
            Deployment.is_demo,
            func.coalesce(benchmarks.c.benchmarks, 0).label("benchmarks"),
        )
        .outerjoin(benchmarks, benchmarks.c.deployment_id == Deployment.id)
        .order_by(Deployment.name)
    )
    return rows_of(session, query, DeploymentSummary)


def _theory_baseline():
    """The baseline tok/s a benchmark's theory prediction used (measured median, else profile); correlated,
    so it is looked up for the benchmarks at hand only, through the gap's (benchmark, prediction) index."""
    return (
        select(Prediction.baseline_tps)
        .join(Gap, Gap.prediction_id == Prediction.id)
        .where(Gap.benchmark_id == Benchmark.id, Prediction.source == PredictionSource.THEORY)
        .limit(1)
        .scalar_subquery()
    )


# built once: the Overview asks on every render, and a statement built per call (with its cache key) cost
# more than the SQLite work of this one
_NEWEST_RUNS = (
    select(Run.id)
    .outerjoin(RunCheckpoints, RunCheckpoints.run_id == Run.id)
    .order_by(func.coalesce(RunCheckpoints.newest_checkpoint_id, 0).desc(), Run.id.desc())
    .limit(bindparam("limit", type_=Integer))
)


def newest_runs(session: Session, limit: int) -> list[int]:
    """The `limit` runs whose newest checkpoint was stored last (runs without one after them, newest
    first): read from each run's summary row (db/run_checkpoints.py), whatever the store holds."""
    return list(session.connection().execute(_NEWEST_RUNS, {"limit": limit}).scalars())


def _latest_checkpoint(in_runs: tuple) -> Any:
    """Each run's latest checkpoint (highest step, else newest) with its run's count of checkpoints, as
    a CTE read twice: the runs' summary rows (db/run_checkpoints.py), no window over their checkpoints."""
    return (
        select(
            Checkpoint.id,
            RunCheckpoints.run_id,
            Checkpoint.name,
            Checkpoint.step,
            RunCheckpoints.checkpoints,
        )
        .join(Checkpoint, Checkpoint.id == RunCheckpoints.latest_checkpoint_id)
        .where(*in_runs)
        .cte("latest")
    )


class LatestCheckpoint(NamedTuple):
    """A run's latest checkpoint and its best measured speedup over no speculation, with where and at
    which setting it was measured (None where nothing was)."""

    run: str
    status: str | None
    ttt_length: int | None
    checkpoints: int
    latest_checkpoint: str | None
    step: int | None
    best_speedup: float | None
    measured_tps: float | None
    baseline_tps: float | None
    deployment: str | None
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int | None


def latest_checkpoints(session: Session, limit: int | None = None) -> list[LatestCheckpoint]:
    """Per run (the `limit` runs with the newest checkpoints; None: every run), its latest checkpoint
    (highest step, else newest) and that checkpoint's best measured speedup over no speculation
    (superseded benchmarks left out), with where it was measured; by run name."""
    if limit is None:
        return rows_of(session, _latest_checkpoints_select(False), LatestCheckpoint)
    run_ids = newest_runs(session, limit)
    return rows_of(session, _latest_checkpoints_select(True), LatestCheckpoint, {"run_ids": run_ids})


@cache
def _latest_checkpoints_select(of_runs: bool) -> Select:
    """latest_checkpoints' statement, of the runs bound as `run_ids` when `of_runs`: built once each (the
    Overview asks on every render)."""
    in_runs = (RunCheckpoints.run_id.in_(bindparam("run_ids", expanding=True)),) if of_runs else ()
    latest = _latest_checkpoint(in_runs)
    # each benchmark's baseline looked up once here: inlined in the speedup, the filter and the window's
    # order it was looked up five times a row
    measured = (
        select(
            Benchmark.id,
            Benchmark.checkpoint_id,
            Benchmark.decode_tps,
            func.coalesce(_theory_baseline(), Deployment.baseline_tps).label("baseline_tps"),
            Deployment.name.label("deployment"),
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
        )
        .join(latest, latest.c.id == Benchmark.checkpoint_id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(Benchmark.superseded_by_id.is_(None))
        .cte("measured")
        .prefix_with("MATERIALIZED")
    )
    speedup = measured.c.decode_tps / measured.c.baseline_tps
    best = (
        select(
            *(c for c in measured.c if c.key != "id"),
            speedup.label("speedup"),
            func.row_number()
            .over(partition_by=measured.c.checkpoint_id, order_by=(speedup.desc(), measured.c.id))
            .label("rank"),
        )
        .where(measured.c.baseline_tps.is_not(None))
        .subquery()
    )
    query = (
        select(
            Run.name.label("run"),
            Run.status,
            Run.ttt_length,
            func.coalesce(latest.c.checkpoints, 0).label("checkpoints"),
            latest.c.name.label("latest_checkpoint"),
            latest.c.step,
            best.c.speedup.label("best_speedup"),
            best.c.decode_tps.label("measured_tps"),
            best.c.baseline_tps,
            best.c.deployment,
            best.c.speculative_algorithm,
            best.c.num_steps,
            best.c.topk,
            best.c.num_draft_tokens,
            best.c.concurrency,
        )
        .outerjoin(latest, latest.c.run_id == Run.id)
        .outerjoin(best, (best.c.checkpoint_id == latest.c.id) & (best.c.rank == 1))
        .order_by(Run.name)
    )
    if of_runs:
        query = query.where(Run.id.in_(bindparam("run_ids", expanding=True)))
    return query
