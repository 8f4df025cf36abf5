"""The Leaderboard's ranking as one SQL statement: each competing benchmark's speedup over its baseline,
the mean over repeats per dataset and over datasets per setting, the best setting of each (checkpoint,
deployment, load), and its names and open alerts; only the entries leave the store."""

from sqlalchemy import (
    Float,
    Integer,
    Select,
    String,
    and_,
    case,
    column,
    exists,
    func,
    over,
    select,
    values,
)
from sqlalchemy.orm import aliased

from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run
from specdash.db.parameters import Baselines

SETTING = ["speculative_algorithm", "num_steps", "topk", "num_draft_tokens"]
ENTRY = ["checkpoint_id", "deployment_id", "concurrency"]
# averaged per dataset, then over datasets
NUMBERS = [
    "measured_speedup",
    "predicted_speedup",
    "measured_tps",
    "predicted_tps",
    "baseline_tps",
    "error_band",
]


def _baseline_tables(baselines: Baselines):
    """The measured baselines as two VALUES tables: per (deployment, load, dataset) and per (deployment,
    load). A table without rows gets one of NULLs, which joins nothing."""
    by_dataset = [(d, c, ds, float(tps)) for (d, c, ds), tps in sorted(baselines.by_dataset.items())]
    by_load = [(d, c, float(tps)) for (d, c), tps in sorted(baselines.by_concurrency.items())]
    keys = [column("deployment_id", Integer), column("concurrency", Integer)]
    dataset = values(*keys, column("dataset", String), column("tps", Float), name="baseline_by_dataset")
    load = values(*keys, column("tps", Float), name="baseline_by_load")
    return (
        dataset.data(by_dataset or [(None, None, None, None)]).cte("baseline_by_dataset"),
        load.data(by_load or [(None, None, None)]).cte("baseline_by_load"),
    )


def competing(
    query: Select, deployment_id: int | None, concurrency: int | None, dataset: str | None
) -> Select:
    """The benchmarks that compete: speculative, not superseded, on the filter's deployment, load, dataset."""
    query = query.where(Benchmark.speculative_algorithm.is_not(None), Benchmark.superseded_by_id.is_(None))
    if deployment_id is not None:
        query = query.where(Benchmark.deployment_id == deployment_id)
    if concurrency is not None:
        query = query.where(Benchmark.concurrency == concurrency)
    if dataset is not None:
        query = query.where(Benchmark.dataset == dataset)
    return query


def benchmark_rows(flt, baselines: Baselines):
    """One row per competing benchmark and prediction of the filter's source (none: one row without),
    with its baseline: the measured median of its deployment, load and dataset, else of its deployment and
    load, else its prediction's, else the profile's."""
    by_dataset, by_load = _baseline_tables(baselines)
    judged = aliased(Prediction)
    baseline = func.coalesce(
        by_dataset.c.tps, by_load.c.tps, Prediction.baseline_tps, Deployment.baseline_tps
    )
    query = (
        select(
            *(Benchmark.__table__.c[name] for name in [*ENTRY, *SETTING]),
            func.coalesce(Benchmark.dataset, "").label("dataset"),
            Benchmark.decode_tps.label("measured_tps"),
            Prediction.predicted_tps,
            Prediction.error_band,
            baseline.label("baseline_tps"),
            # the benchmark's verdict is a raised, open alert (whichever source judges it)
            case((and_(Alert.status == "open", Alert.is_alert), 1), else_=0).label("open_alert"),
        )
        .select_from(Benchmark)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(
            Gap,
            and_(
                Gap.benchmark_id == Benchmark.id,
                exists().where(judged.id == Gap.prediction_id, judged.source == flt.source),
            ),
        )
        .outerjoin(Prediction, Prediction.id == Gap.prediction_id)
        .outerjoin(Alert, Alert.benchmark_id == Gap.benchmark_id)
        .outerjoin(
            by_dataset,
            and_(
                by_dataset.c.deployment_id == Benchmark.deployment_id,
                by_dataset.c.concurrency == Benchmark.concurrency,
                by_dataset.c.dataset == func.coalesce(Benchmark.dataset, ""),
            ),
        )
        .outerjoin(
            by_load,
            and_(
                by_load.c.deployment_id == Benchmark.deployment_id,
                by_load.c.concurrency == Benchmark.concurrency,
            ),
        )
    )
    rows = competing(query, flt.deployment_id, flt.concurrency, flt.dataset)
    return rows.cte("benchmark_rows").prefix_with("MATERIALIZED")


def per_setting(flt, baselines: Baselines):
    """Per (checkpoint, deployment, load, setting): the mean over repeats on each dataset, then the mean
    over datasets, with how many datasets and benchmarks, and the open alerts of the setting."""
    rows = benchmark_rows(flt, baselines)
    keys = [rows.c[name] for name in [*ENTRY, *SETTING]]
    speedups = {
        "measured_speedup": rows.c.measured_tps / rows.c.baseline_tps,
        "predicted_speedup": rows.c.predicted_tps / rows.c.baseline_tps,
    }
    per_dataset = (
        select(
            *keys,
            *(func.avg(speedups.get(name, rows.c.get(name))).label(name) for name in NUMBERS),
            func.count().label("benchmarks"),
            func.sum(rows.c.open_alert).label("open_alerts"),
        )
        .where(rows.c.baseline_tps > 0)
        .group_by(*keys, rows.c.dataset)
        .cte("per_dataset")
        .prefix_with("MATERIALIZED")  # each stage once, read as a table: cheaper than nested co-routines
    )
    keys = [per_dataset.c[name] for name in [*ENTRY, *SETTING]]
    return (
        select(
            *keys,
            *(func.avg(per_dataset.c[name]).label(name) for name in NUMBERS),
            func.count().label("datasets"),
            func.sum(per_dataset.c.benchmarks).label("benchmarks"),
            func.sum(per_dataset.c.open_alerts).label("open_alerts"),
        )
        .group_by(*keys)
        .cte("per_setting")
        .prefix_with("MATERIALIZED")
    )


def ranked_entries(flt, baselines: Baselines, rank_by: str):
    """One row per (checkpoint, deployment, load) of a run not archived: its best setting by `rank_by`
    (ties: the setting in ascending order, missing values last), and every open alert of the entry
    whatever its setting; with the run's, checkpoint's and deployment's names and the run's target."""
    settings = per_setting(flt, baselines)
    entry = [settings.c[name] for name in ENTRY]
    by = func.coalesce(settings.c[f"{rank_by}_speedup"], -1.0)
    # the best speedup per entry by a GROUP BY, then the first setting reaching it: in SQLite a window
    # over every setting cost a third more than both
    best = (
        select(
            *entry, func.max(by).label("best"), func.sum(settings.c.open_alerts).label("entry_open_alerts")
        )
        .group_by(*entry)
        .cte("best")
        .prefix_with("MATERIALIZED")
    )
    picked = (
        select(
            settings,
            best.c.entry_open_alerts,
            over(
                func.row_number(),
                partition_by=entry,
                order_by=[settings.c[name].asc().nulls_last() for name in SETTING],
            ).label("pick"),
        )
        .join(best, and_(*(best.c[name] == settings.c[name] for name in ENTRY), by == best.c.best))
        .subquery("picked")
    )
    return (
        select(
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Deployment.name.label("deployment"),
            Run.target_model,
            *(picked.c[name] for name in [*ENTRY, *SETTING, *NUMBERS, "datasets", "benchmarks"]),
            picked.c.entry_open_alerts.label("open_alerts"),
        )
        .join(Checkpoint, picked.c.checkpoint_id == Checkpoint.id)
        .join(Run, Checkpoint.run_id == Run.id)
        .join(Deployment, picked.c.deployment_id == Deployment.id)
        .where(picked.c.pick == 1, Run.archived_at.is_(None))  # archived runs compete no more
        .subquery("entries")
    )


def board_order(entries, rank_by: str) -> list:
    """The leaderboard's order: the ranking speedup (missing last), then run and checkpoint by name, then
    the entry's ids (a checkpoint on two deployments or loads)."""
    return [
        entries.c[f"{rank_by}_speedup"].desc().nulls_last(),
        entries.c.run,
        entries.c.checkpoint,
        *(entries.c[name] for name in ENTRY),
    ]


def board_select(flt, baselines: Baselines) -> Select:
    """The entries, ranked."""
    entries = ranked_entries(flt, baselines, flt.rank_by)
    return select(entries).order_by(*board_order(entries, flt.rank_by))
