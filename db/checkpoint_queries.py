"""Read queries behind the Checkpoints page: checkpoints of runs, their speculation settings, measured and
predicted throughput per checkpoint, training curves downsampled in SQL, per-position acceptance."""

from typing import Any

import pandas as pd
from sqlalchemy import Integer, cast, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import Setting, SettingAtLoad
from specdash.db.acceptance import checkpoint_acceptance, measured_acceptance
from specdash.db.models import (
    BUILTIN_SOURCES,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    MetricKey,
    MetricPoint,
    Prediction,
    Run,
)


def checkpoints_frame(session: Session, run_ids: list[int]) -> pd.DataFrame:
    """Checkpoints of the runs, in training order, with how many benchmarks each has."""
    if not run_ids:
        return pd.DataFrame(columns=["id", "run", "name", "epoch", "step", "path", "benchmarks"])
    # counted per checkpoint of these runs through the benchmark's checkpoint index, not for every one
    benchmarks = select(func.count()).where(Benchmark.checkpoint_id == Checkpoint.id).scalar_subquery()
    query = (
        select(
            Checkpoint.id,
            Run.name.label("run"),
            Checkpoint.name,
            Checkpoint.epoch,
            Checkpoint.step,
            Checkpoint.path,
            benchmarks.label("benchmarks"),
        )
        .join(Run, Checkpoint.run_id == Run.id)
        .where(Checkpoint.run_id.in_(run_ids))
        .order_by(Run.name, func.coalesce(Checkpoint.step, -1), Checkpoint.name)
    )
    return pd.DataFrame(session.execute(query).mappings().all())


def benchmarked_deployments(session: Session, checkpoint_ids: list[int]) -> pd.DataFrame:
    """Deployments the checkpoints were benchmarked on, the most used first."""
    if not checkpoint_ids:
        return pd.DataFrame(columns=["id", "name", "benchmarks"])
    query = (
        select(Deployment.id, Deployment.name, func.count(Benchmark.id).label("benchmarks"))
        .join(Benchmark, Benchmark.deployment_id == Deployment.id)
        .where(Benchmark.checkpoint_id.in_(checkpoint_ids))
        .group_by(Deployment.id, Deployment.name)
        .order_by(func.count(Benchmark.id).desc(), Deployment.name)
    )
    return pd.DataFrame(session.execute(query).mappings().all())


def speculation_settings(
    session: Session, checkpoint_ids: list[int], deployment_id: int
) -> list[SettingAtLoad]:
    """Settings the checkpoints were benchmarked at on the deployment, the one covering most checkpoints
    first."""
    if not checkpoint_ids:
        return []
    covered = func.count(Benchmark.checkpoint_id.distinct())
    query = (
        select(
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
        )
        .where(
            Benchmark.checkpoint_id.in_(checkpoint_ids),
            Benchmark.deployment_id == deployment_id,
            Benchmark.speculative_algorithm.is_not(None),
        )
        .group_by(
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
        )
        .order_by(
            covered.desc(),
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
        )
    )
    settings = []
    for algorithm, steps, topk, tokens, concurrency in session.execute(query):
        setting = Setting.of(algorithm, steps, topk, tokens)
        settings.append(SettingAtLoad(**vars(setting), concurrency=concurrency))
    return settings


def _matches(setting: SettingAtLoad):
    """The setting's benchmarks among a few checkpoints' (the caller scopes by checkpoint). The algorithm
    and the load are compared as expressions, so that SQLite, without statistics, reads them through the
    checkpoint index rather than an index on (algorithm, deployment, load) or (deployment, load): those
    hold every checkpoint's benchmarks of the setting (50,000 on a deployment at scale 10: 38 ms a query
    against 1 ms)."""

    def same(column, value):
        return column.is_(None) if value is None else column == value

    return (
        func.coalesce(Benchmark.speculative_algorithm, "") == setting.speculative_algorithm,
        same(Benchmark.num_steps, setting.num_steps),
        same(Benchmark.topk, setting.topk),
        same(Benchmark.num_draft_tokens, setting.num_draft_tokens),
        Benchmark.concurrency + 0 == setting.concurrency,
    )


def _std(mean: pd.Series, mean_sq: pd.Series, n: pd.Series) -> pd.Series:
    """Sample standard deviation from SQL's avg(x) and avg(x*x) (SQLite has no stddev)."""
    variance = (mean_sq - mean**2).clip(lower=0) * n / (n - 1)
    return variance.where(n > 1).pow(0.5)


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


COMPARISON_COLUMNS = [
    "checkpoint_id",
    "run",
    "checkpoint",
    "step",
    "n",
    "measured_tps",
    "measured_tps_std",
    "measured_accept_length",
    "measured_accept_length_std",
    "source",
    "predicted_tps",
    "predicted_accept_length",
    "error_band",
    "extrapolated",
]
PREDICTED_COLUMNS = [
    "checkpoint_id",
    "source",
    "predicted_tps",
    "predicted_accept_length",
    "error_band",
    "extrapolated",
]


def checkpoint_comparison(
    session: Session,
    checkpoint_ids: list[int],
    deployment_id: int,
    setting: SettingAtLoad,
    dataset: str | None = None,
) -> pd.DataFrame:
    """Per checkpoint: measured tok/s and accept length (mean, standard deviation, number of benchmarks,
    superseded ones left out) and, per prediction source, the predicted ones, over every dataset unless one
    is given. One row per checkpoint and source; `source` is None for a checkpoint without a prediction."""
    if not checkpoint_ids:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    scope = (
        Benchmark.checkpoint_id.in_(checkpoint_ids),
        Benchmark.deployment_id == deployment_id,
        Benchmark.superseded_by_id.is_(None),
        *_matches(setting),
        *((Benchmark.dataset == dataset,) if dataset is not None else ()),
    )
    measured = _measured(session, scope)
    if measured.empty:
        return pd.DataFrame(columns=COMPARISON_COLUMNS)
    frame = measured.merge(_predicted(session, scope), on="checkpoint_id", how="left")
    frame["extrapolated"] = frame["extrapolated"].fillna(0).astype(bool)
    frame["source"] = frame["source"].astype(object).where(frame["source"].notna(), None)
    order = frame["step"].fillna(-1)
    return frame.assign(_order=order).sort_values(["run", "_order", "checkpoint", "source"])[
        COMPARISON_COLUMNS
    ]


def _measured(session: Session, scope: tuple[Any, ...]) -> pd.DataFrame:
    """Measured tok/s and accept length per checkpoint of the benchmarks in scope (mean, std, count)."""
    query = (
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
        .join(Run, Checkpoint.run_id == Run.id)
        .where(*scope)
        .group_by(Checkpoint.id, Run.name, Checkpoint.name, Checkpoint.step)
    )
    measured = pd.DataFrame(session.execute(query).mappings().all())
    if not measured.empty:
        measured["measured_tps_std"] = _std(measured["measured_tps"], measured["tps_sq"], measured["n"])
        measured["measured_accept_length_std"] = _std(
            measured["measured_accept_length"], measured["tau_sq"], measured["n_tau"]
        )
    return measured


def _predicted(session: Session, scope: tuple[Any, ...]) -> pd.DataFrame:
    """Per checkpoint and prediction source, its predictions' mean tok/s, tau and band over the
    benchmarks in scope: a prediction applies to the benchmarks it was compared with (its gaps)."""
    query = (
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
    predicted = pd.DataFrame(session.execute(query).mappings().all())
    return pd.DataFrame(columns=PREDICTED_COLUMNS) if predicted.empty else predicted


def comparison_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint: measured tok/s, then per prediction source its predicted tok/s and the gap
    (1 - measured / predicted), then the accept lengths; the CSV download and the page's table."""
    keys = ["run", "checkpoint", "step", "n", "measured_tps", "measured_tps_std"]
    table = frame.drop_duplicates(["run", "checkpoint"]).reset_index(drop=True)
    out = table[keys].copy()
    sources = sorted(frame["source"].dropna().unique(), key=lambda s: (s not in BUILTIN_SOURCES, s))
    by_source = {
        s: g.set_index(["run", "checkpoint"]) for s, g in frame.dropna(subset=["source"]).groupby("source")
    }
    index = list(zip(table["run"], table["checkpoint"], strict=True))
    for source in sources:
        values = by_source[source]
        predicted = pd.Series([values["predicted_tps"].get(i) for i in index], dtype="float64")
        out[f"predicted_tps_{source}"] = predicted
        out[f"gap_{source}"] = 1 - out["measured_tps"].astype("float64") / predicted
    out["measured_accept_length"] = table["measured_accept_length"]
    out["measured_accept_length_std"] = table["measured_accept_length_std"]
    for source in sources:
        values = by_source[source]
        out[f"predicted_accept_length_{source}"] = pd.Series(
            [values["predicted_accept_length"].get(i) for i in index], dtype="float64"
        )
    return out


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


POSITION_COLUMNS = ["run", "checkpoint", "step", "position", "rate", "source"]


def position_acceptance_frame(
    session: Session, checkpoint_ids: list[int], from_benchmarks: bool = False
) -> pd.DataFrame:
    """Conditional acceptance per draft position of the checkpoints, position 0-based: stored (training
    acc_i), and with `from_benchmarks` for a checkpoint without any, the one its benchmarks imply (source
    MEASURED_SOURCE_PREFIX + how); the columns are there even when no checkpoint has any."""
    if not checkpoint_ids:
        return pd.DataFrame(columns=POSITION_COLUMNS)
    stored = checkpoint_acceptance(session, checkpoint_ids)
    named = session.execute(
        select(Checkpoint.id, Run.name, Checkpoint.name, Checkpoint.step)
        .join(Run, Checkpoint.run_id == Run.id)
        .where(Checkpoint.id.in_(checkpoint_ids))
        .order_by(Run.name, func.coalesce(Checkpoint.step, -1), Checkpoint.name)
    ).all()
    rows = [
        dict(
            run=run,
            checkpoint=checkpoint,
            step=step,
            position=i,
            rate=rate,
            source=stored[checkpoint_id].source,
        )
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
                dict(run=run, checkpoint=checkpoint, step=step, position=i, rate=rate, source=source)
                for i, rate in enumerate(measured.rates)
            ]
    return pd.DataFrame(rows, columns=POSITION_COLUMNS)


# Position-acceptance rows derived from benchmarks have a source starting with this (then survival or
# accept_length, MeasuredAcceptance.source)
MEASURED_SOURCE_PREFIX = "benchmarks: "
