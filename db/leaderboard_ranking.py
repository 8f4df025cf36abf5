"""The Leaderboard's ranking as one SQL statement: each competing benchmark's speedup over its baseline,
the mean over repeats per dataset and over datasets per setting, the best setting of each (checkpoint,
deployment, load), and its names and open alerts; only the entries leave the store."""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import (
    BindParameter,
    CompoundSelect,
    Select,
    String,
    and_,
    case,
    exists,
    false,
    func,
    literal,
    over,
    select,
    true,
    union_all,
)
from sqlalchemy.orm import aliased

from specdash.costmodel.domain import GapStatus, PredictionSource
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, Gap, Prediction, Run

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
RANKINGS = ("measured", "predicted")
# a stored entry's columns (db/leaderboard_models.py), after its source and ranking
STORED = ["across", "dataset", *ENTRY, *SETTING, *NUMBERS, "datasets", "benchmarks"]


@dataclass(frozen=True)
class Competing:
    """Which benchmarks compete (the Leaderboard's filter reads the same): a deployment, load and dataset
    (None: every one), and the prediction source whose predictions they are compared with."""

    deployment_id: int | None = None
    concurrency: int | None = None
    dataset: str | None = None
    source: str = PredictionSource.THEORY


@dataclass(frozen=True)
class Places:
    """Deployments and loads (lists or expanding bound parameters): only the entries at one of each."""

    deployment_ids: Sequence[int] | BindParameter
    loads: Sequence[int] | BindParameter

    def of(self, query: Select) -> Select:
        return query.where(
            Benchmark.deployment_id.in_(self.deployment_ids), Benchmark.concurrency.in_(self.loads)
        )


def _median(keys: list, name: str, places: Places | None = None):
    """The median no-speculation tok/s per `keys` (columns of the baseline benchmarks: not superseded; at
    `places` only, when given), as statistics.median gives it: the middle value, or the mean of the two
    middle ones."""
    tps = Benchmark.decode_tps
    baselines = select(
        *keys,
        tps.label("tps"),
        over(func.row_number(), partition_by=keys, order_by=tps).label("place"),
        over(func.count(), partition_by=keys).label("n"),
    ).where(
        Benchmark.speculative_algorithm.is_(None),
        Benchmark.superseded_by_id.is_(None),
        tps.is_not(None),
    )
    ranked = (places.of(baselines) if places is not None else baselines).subquery(f"{name}_ranked")
    middle = ranked.c.place.in_([(ranked.c.n + 1) // 2, (ranked.c.n + 2) // 2])
    names = [ranked.c[key.name] for key in keys]
    return select(*names, func.avg(ranked.c.tps).label("tps")).where(middle).group_by(*names).cte(name)


def _baseline_tables(places: Places | None = None):
    """The measured baselines, computed in the statement from the few no-speculation benchmarks (so it
    holds no literal data, and its compiled form is cached): per (deployment, load, dataset) and per
    (deployment, load)."""
    dataset = func.coalesce(Benchmark.dataset, "").label("dataset")
    load = [Benchmark.deployment_id.label("deployment_id"), Benchmark.concurrency.label("concurrency")]
    return _median([*load, dataset], "baseline_by_dataset", places), _median(load, "baseline_by_load", places)


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


def benchmark_rows(
    flt, checkpoint_ids: Sequence[int] | BindParameter | None = None, places: Places | None = None
):
    """One row per competing benchmark (of these checkpoints, None: of all; at `places`, when given) and
    prediction of the filter's source (none: one row without), with its baseline: the measured median of
    its deployment, load and dataset, else of its deployment and load, else its prediction's, else the
    profile's."""
    by_dataset, by_load = _baseline_tables(places)
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
            case((and_(Alert.status == GapStatus.OPEN, Alert.is_alert), 1), else_=0).label("open_alert"),
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
    if checkpoint_ids is not None:
        rows = rows.where(Benchmark.checkpoint_id.in_(checkpoint_ids))
    if places is not None:
        rows = places.of(rows)
    return rows.cte("benchmark_rows").prefix_with("MATERIALIZED")


def per_dataset(rows):
    """Per (checkpoint, deployment, load, setting, dataset) of `benchmark_rows`: the mean over repeats,
    with how many benchmarks and open alerts."""
    keys = [rows.c[name] for name in [*ENTRY, *SETTING]]
    speedups = {
        "measured_speedup": rows.c.measured_tps / rows.c.baseline_tps,
        "predicted_speedup": rows.c.predicted_tps / rows.c.baseline_tps,
    }
    return (
        select(
            *keys,
            rows.c.dataset,
            *(func.avg(speedups.get(name, rows.c.get(name))).label(name) for name in NUMBERS),
            func.count().label("benchmarks"),
            func.sum(rows.c.open_alert).label("open_alerts"),
        )
        .where(rows.c.baseline_tps > 0)
        .group_by(*keys, rows.c.dataset)
        .cte("per_dataset")
        .prefix_with("MATERIALIZED")  # each stage once, read as a table: cheaper than nested co-routines
    )


def per_setting(flt):
    """Per (checkpoint, deployment, load, setting): the mean over repeats on each dataset, then the mean
    over datasets, with how many datasets and benchmarks, and the open alerts of the setting."""
    return across_datasets(per_dataset(benchmark_rows(flt)))


def across_datasets(by_dataset):
    """`per_dataset`'s rows per setting: the mean over datasets, how many, their benchmarks and alerts."""
    keys = [by_dataset.c[name] for name in [*ENTRY, *SETTING]]
    return (
        select(
            *keys,
            *(func.avg(by_dataset.c[name]).label(name) for name in NUMBERS),
            func.count().label("datasets"),
            func.sum(by_dataset.c.benchmarks).label("benchmarks"),
            func.sum(by_dataset.c.open_alerts).label("open_alerts"),
        )
        .group_by(*keys)
        .cte("per_setting")
        .prefix_with("MATERIALIZED")
    )


def picked(settings, views: Sequence[str], rank_by: str):
    """Per entry (checkpoint, deployment, load) of each view (`views`: the columns naming one, none for a
    single view) among `settings`' rows: the best setting by `rank_by` (ties: the setting in ascending
    order, missing values last) as `pick` = 1, with every open alert of the entry whatever its setting."""
    entry = [settings.c[name] for name in [*views, *ENTRY]]
    # one sort of the settings per entry, both windows over it: the GROUP BY of each entry's best and a
    # join back to it cost 18 % more on SQLite (one setting per entry, 117,000 views) and 48 % more on
    # PostgreSQL; with six settings an entry the two are alike
    return select(
        settings,
        over(func.sum(settings.c.open_alerts), partition_by=entry).label("entry_open_alerts"),
        over(func.row_number(), partition_by=entry, order_by=_best_first(settings, rank_by)).label("pick"),
    ).subquery(f"picked_{rank_by}")


def _best_first(settings, rank_by: str) -> list:
    """An entry's settings best first by `rank_by`: ties in the setting's ascending order, missing values
    last."""
    by = func.coalesce(settings.c[f"{rank_by}_speedup"], -1.0)
    return [by.desc(), *(settings.c[name].asc().nulls_last() for name in SETTING)]


def picked_each_way(settings, views: Sequence[str]):
    """`settings`' rows, each with its place in its entry (as `picked`) by every ranking, `pick_measured`
    and `pick_predicted`, in one table: both windows share a partition, so the settings are read and
    partitioned once (stored_rows of a 300,000-benchmark file's 225,000 views: 5.7 -> 4.8 s, with the
    entry's alerts, which stored entries do not keep, left out)."""
    entry = [settings.c[name] for name in [*views, *ENTRY]]
    return (
        select(
            settings,
            *(
                over(func.row_number(), partition_by=entry, order_by=_best_first(settings, rank_by)).label(
                    f"pick_{rank_by}"
                )
                for rank_by in RANKINGS
            ),
        )
        .cte("picked")
        .prefix_with("MATERIALIZED")
    )


def ranked_entries(flt, rank_by: str):
    """One row per (checkpoint, deployment, load) of a run not archived: its best setting by `rank_by`,
    and every open alert of the entry; with the run's, checkpoint's and deployment's names and the run's
    target."""
    best = picked(per_setting(flt), [], rank_by)
    return named_entries(best, [best.c.entry_open_alerts.label("open_alerts")], best.c.pick == 1)


def named_entries(entries, extra: list, *where):
    """`entries`' rows (an entry's place, setting, numbers, datasets and benchmarks) with the run's,
    checkpoint's and deployment's names and the run's target, and `extra` columns; those of runs not
    archived that meet `where`: the Leaderboard's rows, computed (ranked_entries) or stored."""
    return (
        select(
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Deployment.name.label("deployment"),
            Run.target_model,
            *(entries.c[name] for name in [*ENTRY, *SETTING, *NUMBERS, "datasets", "benchmarks"]),
            *extra,
        )
        .join(Checkpoint, entries.c.checkpoint_id == Checkpoint.id)
        .join(Checkpoint.run)
        .join(Deployment, entries.c.deployment_id == Deployment.id)
        .where(*where, Run.archived_at.is_(None))  # archived runs compete no more
        .subquery("entries")
    )


def stored_rows(
    source: str, checkpoint_ids: Sequence[int] | BindParameter | None, places: Places | None = None
) -> CompoundSelect:
    """The entries to store for a source (db/leaderboard_entries.py), of these checkpoints (None: all; at `places` only,
    when given), ranked both ways, as (source, rank_by, *STORED) rows: across datasets (`across`), and per dataset for an entry
    measured on several. An entry measured on one dataset only ranks the same on it as across datasets:
    its across row names that dataset and stands for both (otherwise its dataset is '')."""
    by_dataset = per_dataset(benchmark_rows(Competing(source=source), checkpoint_ids, places))
    spread = (
        select(
            *(by_dataset.c[name] for name in ENTRY),
            func.count(by_dataset.c.dataset.distinct()).label("datasets"),
            func.min(by_dataset.c.dataset).label("sole"),
        )
        .group_by(*(by_dataset.c[name] for name in ENTRY))
        .cte("spread")
        .prefix_with("MATERIALIZED")
    )
    across = across_datasets(by_dataset)
    shared = [*ENTRY, *SETTING, *NUMBERS]
    views = union_all(
        select(
            false().label("across"),
            by_dataset.c.dataset,
            *(by_dataset.c[name] for name in shared),
            literal(1).label("datasets"),
            by_dataset.c.benchmarks,
            by_dataset.c.open_alerts,
        )
        .join(spread, and_(*(spread.c[name] == by_dataset.c[name] for name in ENTRY)))
        .where(spread.c.datasets > 1),
        select(
            true().label("across"),
            case((spread.c.datasets == 1, spread.c.sole), else_=literal("", String)).label("dataset"),
            *(across.c[name] for name in shared),
            across.c.datasets,
            across.c.benchmarks,
            across.c.open_alerts,
        ).join(spread, and_(*(spread.c[name] == across.c[name] for name in ENTRY))),
    )
    best = picked_each_way(views.cte("views").prefix_with("MATERIALIZED"), ["across", "dataset"])
    columns = [best.c[name] for name in STORED]
    return union_all(
        *(
            select(
                literal(source, String).label("source"), literal(rank_by, String).label("rank_by"), *columns
            ).where(best.c[f"pick_{rank_by}"] == 1)
            for rank_by in RANKINGS
        )
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
