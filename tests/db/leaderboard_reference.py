"""The Leaderboard and the deploy answer as they were computed before the ranking moved into SQL: every
competing benchmark read into pandas and ranked there. Kept as the reference the SQL path must reproduce
(tests/db/test_leaderboard_ranking.py)."""

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.app.board_frames import INTEGER_COLUMNS
from specdash.db.deploy import DEPLOY_COLUMNS
from specdash.db.leaderboard import COLUMNS as BOARD_COLUMNS
from specdash.db.leaderboard import LeaderboardFilter
from specdash.db.leaderboard_ranking import ENTRY, SETTING
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run
from specdash.db.parameters import load_baselines
from specdash.db.queries import plain
from specdash.rows import Baselines


def frame_of(session, query) -> pd.DataFrame:
    """A query's rows as a DataFrame with its labels as columns (the reference ranks in pandas)."""
    result = session.connection().execute(query)
    return pd.DataFrame.from_records(plain(result), columns=list(result.keys()))


COLUMNS = [name for name in BOARD_COLUMNS if name != "target_model"]


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


def pandas_leaderboard(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
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


def pandas_deploy_table(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
    """One row per (deployment, load): the entry with the highest measured speedup there (ties: the
    leaderboard's order), how many checkpoints competed and the runner-up's speedup; `within_band` says
    whether measured lies inside predicted ± the prediction's band (None without a prediction or band).
    Ordered by target model, deployment and load."""
    board = pandas_leaderboard(session, LeaderboardFilter(**{**vars(flt), "rank_by": "measured"}))
    if board.empty:
        return pd.DataFrame(columns=DEPLOY_COLUMNS)
    targets = dict(
        session.execute(
            select(Checkpoint.id, Run.target_model)
            .join(Run, Checkpoint.run_id == Run.id)
            .where(Checkpoint.id.in_([int(i) for i in board["checkpoint_id"].unique()]))
        ).all()
    )
    board = board.assign(target_model=board["checkpoint_id"].map(lambda i: targets.get(int(i))))
    groups = board.groupby(["deployment_id", "concurrency"], sort=False)
    best = groups.head(1).copy()
    best["candidates"] = groups["checkpoint_id"].transform("size").loc[best.index].astype("Int64")
    second = groups.nth(1).set_index(["deployment_id", "concurrency"])["measured_speedup"]
    best["runner_up_speedup"] = [
        second.get((d, c)) for d, c in zip(best["deployment_id"], best["concurrency"], strict=True)
    ]
    low = best["predicted_speedup"] * (1 - best["error_band"])
    high = best["predicted_speedup"] * (1 + best["error_band"])
    inside = (best["measured_speedup"] >= low) & (best["measured_speedup"] <= high)
    best["within_band"] = inside.where(best["error_band"].notna() & best["predicted_speedup"].notna())
    best["target_model"] = best["target_model"].fillna("-")
    best = best.sort_values(["target_model", "deployment", "concurrency"], kind="stable")
    return best[DEPLOY_COLUMNS].reset_index(drop=True)
