"""Read queries behind the Checkpoints page: checkpoints of runs, their speculation settings, measured and
predicted throughput per checkpoint, training curves downsampled in SQL, per-position acceptance."""

from functools import lru_cache
from typing import Any, NamedTuple

from sqlalchemy import Integer, Select, bindparam, cast, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import Setting, SettingAtLoad
from specdash.db.acceptance import checkpoint_acceptance, measured_acceptance
from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    MetricKey,
    MetricPoint,
    Prediction,
    Run,
)
from specdash.db.rows import rows_of


class CheckpointSummary(NamedTuple):
    """A checkpoint of a run with how many benchmarks it has."""

    id: int
    run: str
    name: str
    epoch: int | None
    step: int | None
    path: str | None
    benchmarks: int


def _bound_list(name: str):
    """A list of values bound at each run (an IN list expanded then): the Checkpoints page's statements are
    built once, since one built per call (with its cache key) cost more than its SQL."""
    return bindparam(name, expanding=True)


# A checkpoint as the Checkpoints page and `specdash export checkpoints` list it (joined to its run).
CHECKPOINT_COLUMNS = (
    Checkpoint.id,
    Run.name.label("run"),
    Checkpoint.name,
    Checkpoint.epoch,
    Checkpoint.step,
    Checkpoint.path,
)
# counted per checkpoint of these runs through the benchmark's checkpoint index, not for every one
_BENCHMARKS_OF_CHECKPOINT = (
    select(func.count()).where(Benchmark.checkpoint_id == Checkpoint.id).scalar_subquery()
)
_CHECKPOINT_SUMMARIES = (
    select(*CHECKPOINT_COLUMNS, _BENCHMARKS_OF_CHECKPOINT.label("benchmarks"))
    .join(Checkpoint.run)
    .where(Checkpoint.run_id.in_(_bound_list("run_ids")))
    .order_by(Run.name, func.coalesce(Checkpoint.step, -1), Checkpoint.name)
)


def checkpoint_summaries(session: Session, run_ids: list[int]) -> list[CheckpointSummary]:
    """Checkpoints of the runs, in training order, with how many benchmarks each has."""
    if not run_ids:
        return []
    return rows_of(session, _CHECKPOINT_SUMMARIES, CheckpointSummary, {"run_ids": run_ids})


class BenchmarkedDeployment(NamedTuple):
    """A deployment some checkpoints were benchmarked on, with how many of their benchmarks it ran."""

    id: int
    name: str
    benchmarks: int


_BENCHMARKED_DEPLOYMENTS = (
    select(Deployment.id, Deployment.name, func.count(Benchmark.id).label("benchmarks"))
    .join(Benchmark, Benchmark.deployment_id == Deployment.id)
    .where(Benchmark.checkpoint_id.in_(_bound_list("checkpoint_ids")))
    .group_by(Deployment.id, Deployment.name)
    .order_by(func.count(Benchmark.id).desc(), Deployment.name)
)


def benchmarked_deployments(session: Session, checkpoint_ids: list[int]) -> list[BenchmarkedDeployment]:
    """Deployments the checkpoints were benchmarked on, the most used first."""
    if not checkpoint_ids:
        return []
    parameters = {"checkpoint_ids": checkpoint_ids}
    return rows_of(session, _BENCHMARKED_DEPLOYMENTS, BenchmarkedDeployment, parameters)


_SETTING_COLUMNS = (
    Benchmark.speculative_algorithm,
    Benchmark.num_steps,
    Benchmark.topk,
    Benchmark.num_draft_tokens,
    Benchmark.concurrency,
)
_SPECULATION_SETTINGS = (
    select(*_SETTING_COLUMNS)
    .where(
        Benchmark.checkpoint_id.in_(_bound_list("checkpoint_ids")),
        Benchmark.deployment_id == bindparam("deployment_id"),
        Benchmark.speculative_algorithm.is_not(None),
    )
    .group_by(*_SETTING_COLUMNS)
    .order_by(
        func.count(Benchmark.checkpoint_id.distinct()).desc(),
        Benchmark.speculative_algorithm,
        Benchmark.num_steps,
        Benchmark.num_draft_tokens,
        Benchmark.concurrency,
    )
)


def speculation_settings(
    session: Session, checkpoint_ids: list[int], deployment_id: int
) -> list[SettingAtLoad]:
    """Settings the checkpoints were benchmarked at on the deployment, the one covering most checkpoints
    first."""
    if not checkpoint_ids:
        return []
    parameters = {"checkpoint_ids": checkpoint_ids, "deployment_id": deployment_id}
    settings = []
    for algorithm, steps, topk, tokens, concurrency in session.connection().execute(
        _SPECULATION_SETTINGS, parameters
    ):
        setting = Setting.of(algorithm, steps, topk, tokens)
        settings.append(SettingAtLoad(**vars(setting), concurrency=concurrency))
    return settings


# A setting's parts as the benchmarks are compared with them, by name: a part is bound by its name, or one
# not stated (None) tested for NULL.
_SETTING_PARTS = {
    "speculative_algorithm": func.coalesce(Benchmark.speculative_algorithm, ""),
    "num_steps": Benchmark.num_steps,
    "topk": Benchmark.topk,
    "num_draft_tokens": Benchmark.num_draft_tokens,
    "concurrency": Benchmark.concurrency + 0,
}


def _setting_values(setting: SettingAtLoad) -> dict[str, Any]:
    return {name: getattr(setting, name) for name in _SETTING_PARTS}


def _matches(unstated: frozenset[str]) -> tuple[Any, ...]:
    """The setting's benchmarks among a few checkpoints' (the caller scopes by checkpoint), its parts bound
    by name but the `unstated` ones. The algorithm and the load are compared as expressions, so that SQLite,
    without statistics, reads them through the checkpoint index rather than an index on (algorithm,
    deployment, load) or (deployment, load): those hold every checkpoint's benchmarks of the setting
    (50,000 on a deployment at scale 10: 38 ms a query against 1 ms)."""
    return tuple(
        part.is_(None) if name in unstated else part == bindparam(name)
        for name, part in _SETTING_PARTS.items()
    )


def _std(mean: float | None, mean_sq: float | None, n: int) -> float | None:
    """Sample standard deviation from SQL's avg(x) and avg(x*x) (SQLite has no stddev); None below two."""
    if n <= 1 or mean is None or mean_sq is None:
        return None
    mean, mean_sq = float(mean), float(mean_sq)  # PostgreSQL's avg is a Decimal
    variance = max(mean_sq - mean**2, 0.0) * n / (n - 1)
    return float(variance**0.5)


def benchmark_datasets(session: Session, checkpoint_ids: list[int], deployment_id: int) -> list[str]:
    """Datasets the checkpoints were benchmarked on, on the deployment."""
    if not checkpoint_ids:
        return []
    query = (
        select(Benchmark.dataset)
        .where(
            Benchmark.checkpoint_id.in_(checkpoint_ids),
            Benchmark.deployment_id == deployment_id,
            Benchmark.dataset.is_not(None),
        )
        .distinct()
        .order_by(Benchmark.dataset)
    )
    return list(session.scalars(query))


class CheckpointComparison(NamedTuple):
    """One checkpoint's measured tok/s and accept length at one setting (mean, sample standard deviation
    over its `n` benchmarks) beside one prediction source's (`source` None: the checkpoint has none)."""

    checkpoint_id: int
    run: str
    checkpoint: str
    step: int | None
    n: int
    measured_tps: float
    measured_tps_std: float | None
    measured_accept_length: float | None
    measured_accept_length_std: float | None
    source: str | None
    predicted_tps: float | None
    predicted_accept_length: float | None
    error_band: float | None
    extrapolated: bool


def checkpoint_comparison(
    session: Session,
    checkpoint_ids: list[int],
    deployment_id: int,
    setting: SettingAtLoad,
    dataset: str | None = None,
) -> list[CheckpointComparison]:
    """Per checkpoint: measured tok/s and accept length (mean, standard deviation, number of benchmarks,
    superseded ones left out) and, per prediction source, the predicted ones, over every dataset unless one
    is given. One row per checkpoint and source, in training order then by source; `source` is None for a
    checkpoint without a prediction."""
    if not checkpoint_ids:
        return []
    values = _setting_values(setting)
    measured_select, predicted_select = _comparison_selects(
        frozenset(name for name, value in values.items() if value is None), dataset is not None
    )
    parameters = {
        "checkpoint_ids": checkpoint_ids,
        "deployment_id": deployment_id,
        "dataset": dataset,
        **values,
    }
    predicted = _predicted(session, predicted_select, parameters)
    unpredicted = (None, None, None, None, False)
    rows = [
        CheckpointComparison(*measured, *prediction)
        for measured in _measured(session, measured_select, parameters)
        for prediction in predicted.get(measured[0], [unpredicted])
    ]
    return sorted(rows, key=_training_order)


@lru_cache(maxsize=32)
def _comparison_selects(unstated: frozenset[str], of_dataset: bool) -> tuple[Select, Select]:
    """checkpoint_comparison's two selects (measured, predicted) over the benchmarks in scope: of the
    checkpoints, deployment, setting (but its `unstated` parts) and dataset bound at each run, superseded
    ones left out. Built once per shape of setting."""
    scope = (
        Benchmark.checkpoint_id.in_(_bound_list("checkpoint_ids")),
        Benchmark.deployment_id == bindparam("deployment_id"),
        Benchmark.superseded_by_id.is_(None),
        *_matches(unstated),
        *((Benchmark.dataset == bindparam("dataset"),) if of_dataset else ()),
    )
    return _measured_select(scope), _predicted_select(scope)


def _training_order(row: CheckpointComparison) -> tuple:
    """By run, step (a checkpoint without one first), checkpoint name, then source (none last)."""
    return (
        row.run,
        -1 if row.step is None else row.step,
        row.checkpoint,
        row.source is None,
        row.source or "",
    )


def _measured_select(scope: tuple[Any, ...]) -> Select:
    """Measured tok/s and accept length per checkpoint of the benchmarks in scope (count, means and means of
    squares)."""
    return (
        select(
            Checkpoint.id.label("checkpoint_id"),
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Checkpoint.step,
            func.count(Benchmark.id).label("n"),
            func.avg(Benchmark.decode_tps).label("measured_tps"),
            func.avg(Benchmark.decode_tps * Benchmark.decode_tps).label("tps_sq"),
            func.count(Benchmark.accept_length).label("n_tau"),
            func.avg(Benchmark.accept_length).label("measured_accept_length"),
            func.avg(Benchmark.accept_length * Benchmark.accept_length).label("tau_sq"),
        )
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Checkpoint.run)
        .where(*scope)
        .group_by(Checkpoint.id, Run.name, Checkpoint.name, Checkpoint.step)
    )


def _measured(session: Session, query: Select, parameters: dict[str, Any]) -> list[tuple]:
    """The measured rows (mean, std, count): CheckpointComparison's first nine fields."""
    rows = session.connection().execute(query, parameters)
    return [
        (checkpoint_id, run, checkpoint, step, n, tps, _std(tps, tps_sq, n), tau, _std(tau, tau_sq, n_tau))
        for checkpoint_id, run, checkpoint, step, n, tps, tps_sq, n_tau, tau, tau_sq in rows
    ]


def _predicted_select(scope: tuple[Any, ...]) -> Select:
    """Per checkpoint, per prediction source its predictions' mean tok/s, tau, band and whether any was
    extrapolated, over the benchmarks in scope: a prediction applies to the benchmarks it was compared with
    (its gaps)."""
    return (
        select(
            Benchmark.checkpoint_id,
            Prediction.source,
            func.avg(Prediction.predicted_tps).label("predicted_tps"),
            func.avg(Prediction.accept_length).label("predicted_accept_length"),
            func.avg(Prediction.error_band).label("error_band"),
            func.max(cast(Prediction.extrapolated, Integer)).label("extrapolated"),
        )
        .join(Gap, Gap.benchmark_id == Benchmark.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .where(*scope)
        .group_by(Benchmark.checkpoint_id, Prediction.source)
    )


def _predicted(session: Session, query: Select, parameters: dict[str, Any]) -> dict[int, list[tuple]]:
    """The predicted rows per checkpoint: CheckpointComparison's last five fields."""
    predicted: dict[int, list[tuple]] = {}
    for checkpoint_id, source, tps, tau, band, extrapolated in session.connection().execute(
        query, parameters
    ):
        predicted.setdefault(checkpoint_id, []).append((source, tps, tau, band, bool(extrapolated)))
    return predicted


def metric_keys(session: Session, run_ids: list[int]) -> list[str]:
    """Names of the training metrics logged by any of the runs."""
    if not run_ids:
        return []
    # One index probe per (run, key) on the metric_point primary key, never a scan of the points; the
    # subquery correlates to metric_key only (the earlier form also listed keys no chosen run logged).
    logged = (
        select(MetricPoint.key_id)
        .where(MetricPoint.run_id.in_(run_ids), MetricPoint.key_id == MetricKey.id)
        .correlate(MetricKey)
        .exists()
    )
    query = select(MetricKey.name).where(logged)
    return sorted(session.scalars(query))


class PositionAcceptance(NamedTuple):
    """A checkpoint's conditional acceptance rate at one draft position (0-based), and where it is from."""

    run: str
    checkpoint: str
    step: int | None
    position: int
    rate: float
    source: str


# the checkpoints with their run's name, in training order
_NAMED_CHECKPOINTS = (
    select(Checkpoint.id, Run.name, Checkpoint.name, Checkpoint.step)
    .join(Checkpoint.run)
    .where(Checkpoint.id.in_(_bound_list("checkpoint_ids")))
    .order_by(Run.name, func.coalesce(Checkpoint.step, -1), Checkpoint.name)
)


def position_acceptance(
    session: Session, checkpoint_ids: list[int], from_benchmarks: bool = False
) -> list[PositionAcceptance]:
    """Conditional acceptance per draft position of the checkpoints, position 0-based: stored (training
    acc_i), and with `from_benchmarks` for a checkpoint without any, the one its benchmarks imply (source
    MEASURED_SOURCE_PREFIX + how); the columns are there even when no checkpoint has any."""
    if not checkpoint_ids:
        return []
    stored = checkpoint_acceptance(session, checkpoint_ids)
    named = session.connection().execute(_NAMED_CHECKPOINTS, {"checkpoint_ids": checkpoint_ids}).all()
    rows = [
        PositionAcceptance(run, checkpoint, step, i, rate, stored[checkpoint_id].source)
        for checkpoint_id, run, checkpoint, step in named
        if checkpoint_id in stored
        for i, rate in enumerate(stored[checkpoint_id].rates)
    ]
    if from_benchmarks:
        # drafters without training metrics: the per-position acceptance their benchmarks imply (as the What-if)
        for checkpoint_id, run, checkpoint, step in named:
            if checkpoint_id in stored:
                continue
            measured = measured_acceptance(session, checkpoint_id)
            source = f"{MEASURED_SOURCE_PREFIX}{measured.source}"
            rows += [
                PositionAcceptance(run, checkpoint, step, i, rate, source)
                for i, rate in enumerate(measured.rates)
            ]
    return rows


# Position-acceptance rows derived from benchmarks have a source starting with this (then survival or
# accept_length, MeasuredAcceptance.source)
MEASURED_SOURCE_PREFIX = "benchmarks: "
