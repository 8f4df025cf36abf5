"""The Leaderboard's queries: checkpoints ranked by measured speedup over no speculation (and by predicted,
with the gap) per deployment and load, on one dataset or across datasets, each at its best setting."""

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run
from specdash.db.parameters import Baselines, load_baselines
from specdash.db.queries import frame_of

SETTING = ["speculative_algorithm", "num_steps", "topk", "num_draft_tokens"]
ENTRY = ["checkpoint_id", "deployment_id", "concurrency"]
COLUMNS = [
    "rank",
    "run",
    "checkpoint",
    "deployment",
    "concurrency",
    *SETTING,
    "measured_speedup",
    "predicted_speedup",
    "gap",
    "error_band",
    "measured_tps",
    "predicted_tps",
    "baseline_tps",
    "datasets",
    "benchmarks",
    "open_alerts",
    "checkpoint_id",
    "deployment_id",
]


INTEGER_COLUMNS = (
    "concurrency",
    "benchmarks",
    "open_alerts",
    "datasets",
    "num_steps",
    "topk",
    "num_draft_tokens",
)


@dataclass(frozen=True)
class LeaderboardFilter:
    """Which benchmarks compete: a deployment (None: every one), a load (concurrency; None: every level),
    a dataset (None: across datasets), and the prediction source compared with."""

    deployment_id: int | None = None
    concurrency: int | None = None
    dataset: str | None = None
    source: str = "theory"
    rank_by: str = "measured"  # measured | predicted


def leaderboard_choices(session: Session) -> dict:
    """Deployments with checkpoint benchmarks (most benchmarks first), their loads, and the datasets."""
    benched = (
        Benchmark.checkpoint_id.is_not(None),
        Benchmark.speculative_algorithm.is_not(None),
        Benchmark.superseded_by_id.is_(None),
    )
    deployments = session.execute(
        select(Deployment.id, Deployment.name, func.count(Benchmark.id))
        .join(Benchmark, Benchmark.deployment_id == Deployment.id)
        .where(*benched)
        .group_by(Deployment.id, Deployment.name)
        .order_by(func.count(Benchmark.id).desc(), Deployment.name)
    ).all()
    loads: dict[int, list[int]] = {}
    for deployment_id, concurrency in session.execute(
        select(Benchmark.deployment_id, Benchmark.concurrency)
        .where(*benched)
        .distinct()
        .order_by(Benchmark.deployment_id, Benchmark.concurrency)
    ):
        loads.setdefault(deployment_id, []).append(concurrency)
    datasets = sorted(
        d for d in session.scalars(select(Benchmark.dataset).where(*benched).distinct()) if d is not None
    )
    return {
        "deployments": [(i, name) for i, name, _ in deployments],
        "loads": loads,
        "datasets": datasets,
    }


def _benchmarks(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
    query = (
        select(
            Benchmark.id.label("benchmark_id"),
            Benchmark.checkpoint_id,
            Benchmark.deployment_id,
            Benchmark.concurrency,
            Benchmark.dataset,
            *(Benchmark.__table__.c[name] for name in SETTING),
            Benchmark.decode_tps.label("measured_tps"),
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Deployment.name.label("deployment"),
            Deployment.baseline_tps.label("profile_baseline_tps"),
        )
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Run, Checkpoint.run_id == Run.id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(Run.archived_at.is_(None))  # archived runs compete no more
    )
    return frame_of(session, _benchmark_filter(query, flt))


def _benchmark_filter(query, flt: LeaderboardFilter):
    """The benchmarks that compete: speculative, not superseded, on the filter's deployment, load, dataset."""
    query = query.where(Benchmark.speculative_algorithm.is_not(None), Benchmark.superseded_by_id.is_(None))
    if flt.deployment_id is not None:
        query = query.where(Benchmark.deployment_id == flt.deployment_id)
    if flt.concurrency is not None:
        query = query.where(Benchmark.concurrency == flt.concurrency)
    if flt.dataset is not None:
        query = query.where(Benchmark.dataset == flt.dataset)
    return query


def _predictions(session: Session, flt: LeaderboardFilter, benchmark_ids: list[int]) -> pd.DataFrame:
    query = (
        select(
            Gap.benchmark_id,
            Prediction.predicted_tps,
            Prediction.baseline_tps.label("prediction_baseline_tps"),
            Prediction.error_band,
            # the benchmark's verdict is a raised, open alert (whichever source judges it)
            func.coalesce((Alert.status == "open") & Alert.is_alert, False).label("open_alert"),
        )
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .outerjoin(Alert, Alert.benchmark_id == Gap.benchmark_id)
        .join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(Prediction.source == flt.source)
    )
    # the competing benchmarks' predictions only, read as plain rows (dicts per row cost seconds at 400,000)
    rows = frame_of(session, _benchmark_filter(query, flt))
    if rows.empty:
        return pd.DataFrame(
            columns=["benchmark_id", "predicted_tps", "prediction_baseline_tps", "error_band", "open_alert"]
        )
    return rows[rows["benchmark_id"].isin(benchmark_ids)]


def leaderboard(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
    """One row per (checkpoint, deployment, load) at its best speculation setting, ranked.

    Speedup = tok/s / the no-speculation baseline of the same deployment, load and dataset (the measured
    median when there is one, else the prediction's or the profile's baseline), so datasets whose baselines
    differ 2x compare fairly. On one dataset a setting's speedup is the mean over repeated benchmarks; across
    datasets it is the mean of its per-dataset speedups (`datasets` says how many). The best setting is the
    one with the highest speedup by `rank_by`; `gap` = 1 - measured / predicted speedup at that setting."""
    bench = _benchmarks(session, flt)
    if bench.empty:
        return pd.DataFrame(columns=COLUMNS)
    preds = _predictions(session, flt, bench["benchmark_id"].tolist())
    bench = _speedups(
        bench.merge(preds, on="benchmark_id", how="left"), load_baselines(session, flt.deployment_id)
    )
    if bench.empty:
        return pd.DataFrame(columns=COLUMNS)
    by = f"{flt.rank_by}_speedup"
    best = (
        _per_setting(bench)
        .assign(_key=lambda frame: frame[by].fillna(-1.0))
        .sort_values("_key", ascending=False, kind="stable")
        .drop_duplicates(ENTRY)
        .drop(columns="_key")
    )
    names = bench.drop_duplicates(ENTRY)[[*ENTRY, "run", "checkpoint", "deployment"]]
    # every open alert of the checkpoint on that deployment and load, whatever its setting
    alerts = bench.groupby(ENTRY)["open_alert"].sum().rename("open_alerts").reset_index()
    table = best.drop(columns="open_alerts").merge(names, on=ENTRY).merge(alerts, on=ENTRY)
    table["gap"] = 1 - table["measured_speedup"] / table["predicted_speedup"]
    table = table.sort_values([by, "run", "checkpoint"], ascending=[False, True, True], na_position="last")
    table.insert(0, "rank", range(1, len(table) + 1))
    for name in INTEGER_COLUMNS:
        table[name] = table[name].astype("Int64")
    return table[COLUMNS].reset_index(drop=True)


def _speedups(bench: pd.DataFrame, baselines: Baselines) -> pd.DataFrame:
    """Each benchmark's baseline (the measured median of its deployment, load and dataset, else its
    prediction's, else the profile's) and its measured and predicted speedups over it."""
    # looked up once per (deployment, load, dataset), not once per benchmark
    keys = list(zip(bench["deployment_id"], bench["concurrency"], bench["dataset"], strict=True))
    measured = {key: baselines.lookup(*key) for key in set(keys)}
    bench["baseline_tps"] = (
        pd.Series([measured[key] for key in keys], index=bench.index, dtype="float64")
        .fillna(bench["prediction_baseline_tps"].astype("float64"))
        .fillna(bench["profile_baseline_tps"].astype("float64"))
    )
    bench = bench[bench["baseline_tps"] > 0]
    if bench.empty:
        return bench
    return bench.assign(
        dataset=bench["dataset"].fillna(""),
        measured_speedup=bench["measured_tps"] / bench["baseline_tps"],
        predicted_speedup=bench["predicted_tps"].astype("float64") / bench["baseline_tps"],
        open_alert=bench["open_alert"].fillna(False).astype(bool),
        error_band=bench["error_band"].astype("float64"),
    )


def _per_setting(bench: pd.DataFrame) -> pd.DataFrame:
    """Per (checkpoint, deployment, load, setting): the mean over repeats on each dataset, then the mean
    over datasets."""
    keys = [*ENTRY, *SETTING]
    numbers = ["measured_speedup", "predicted_speedup", "measured_tps", "predicted_tps", "baseline_tps"]
    per_dataset = bench.groupby([*keys, "dataset"], dropna=False).agg(
        **{n: (n, "mean") for n in numbers},
        error_band=("error_band", "mean"),
        benchmarks=("benchmark_id", "count"),
        open_alerts=("open_alert", "sum"),
    )
    return (
        per_dataset.reset_index()
        .groupby(keys, dropna=False)
        .agg(
            **{n: (n, "mean") for n in numbers},
            error_band=("error_band", "mean"),
            datasets=("dataset", "nunique"),
            benchmarks=("benchmarks", "sum"),
            open_alerts=("open_alerts", "sum"),
        )
        .reset_index()
    )
