"""The Leaderboard's queries: checkpoints ranked by measured speedup over no speculation (and by predicted,
with the gap) per deployment and load, on one dataset or across datasets, each at its best setting."""

from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import Select, and_, case, func, over, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.db import leaderboard_entries
from specdash.db.leaderboard_ranking import (
    ENTRY,
    Competing,
    benchmark_rows,
    board_order,
    named_entries,
    ranked_entries,
)
from specdash.db.models import Benchmark, Deployment


class RankedEntry(NamedTuple):
    """A checkpoint on a deployment at one load, at its best speculation setting: its place, speedups over
    no speculation (measured and predicted, with the gap between them) and what they are the mean of."""

    rank: int
    run: str
    checkpoint: str
    deployment: str
    concurrency: int
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    measured_speedup: float | None  # x no speculation
    predicted_speedup: float | None  # x no speculation, by the filter's source
    gap: float | None  # 1 - measured / predicted speedup
    error_band: float | None  # the prediction's expected relative error
    measured_tps: float | None
    predicted_tps: float | None
    baseline_tps: float | None
    datasets: int | None
    benchmarks: int | None
    open_alerts: int | None
    checkpoint_id: int
    deployment_id: int
    target_model: str | None  # the run's: the deploy answer groups by it


class PlaceWinner(NamedTuple):
    """The first entry of a (deployment, load) by measured speedup, how many entries competed there and
    the runner-up's measured speedup (None: none)."""

    entry: RankedEntry
    candidates: int
    runner_up_speedup: float | None


COLUMNS = list(RankedEntry._fields)


@dataclass(frozen=True)
class LeaderboardFilter(Competing):
    """Which benchmarks compete: a deployment (None: every one), a load (concurrency; None: every level),
    a dataset (None: across datasets), and the prediction source compared with; how they are ranked."""

    rank_by: str = "measured"  # measured | predicted


def leaderboard_choices(session: Session) -> dict:
    """Deployments with checkpoint benchmarks (most benchmarks first), their loads, and the datasets: from
    the stored entries (db/leaderboard_entries.py) when the store holds them, else from the benchmarks."""
    if leaderboard_entries.holds(session, PredictionSource.THEORY):
        return _stored_choices(session)
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


def _stored_choices(session: Session) -> dict:
    """The choices among the stored entries: one row per entry across datasets (theory's, by measured
    speedup), the datasets named by an entry's rows (one stored per dataset, or across naming its only one)."""
    stored = leaderboard_entries.TABLE
    view = (stored.c.source == PredictionSource.THEORY, stored.c.rank_by == "measured")
    across = (*view, stored.c.across.is_(True))
    benchmarks = func.sum(stored.c.benchmarks)
    deployments = session.execute(
        select(Deployment.id, Deployment.name)
        .join(stored, stored.c.deployment_id == Deployment.id)
        .where(*across)
        .group_by(Deployment.id, Deployment.name)
        .order_by(benchmarks.desc(), Deployment.name)
    ).all()
    loads: dict[int, list[int]] = {}
    places = select(stored.c.deployment_id, stored.c.concurrency).where(*across).distinct()
    for deployment_id, concurrency in session.execute(places.order_by(*places.selected_columns)):
        loads.setdefault(deployment_id, []).append(concurrency)
    named = select(stored.c.dataset).where(*view, stored.c.dataset != "").distinct()
    return {
        "deployments": [tuple(row) for row in deployments],
        "loads": loads,
        "datasets": sorted(session.scalars(named)),
    }


def leaderboard(
    session: Session, flt: LeaderboardFilter, offset: int = 0, limit: int | None = None
) -> list[RankedEntry]:
    """One row per (checkpoint, deployment, load) at its best speculation setting, ranked in the store;
    `limit` rows from `offset` (ranks offset + 1, ...), or every one.

    Speedup = tok/s / the no-speculation baseline of the same deployment, load and dataset (the measured
    median when there is one, else the prediction's or the profile's baseline), so datasets whose baselines
    differ 2x compare fairly. On one dataset a setting's speedup is the mean over repeated benchmarks; across
    datasets it is the mean of its per-dataset speedups (`datasets` says how many). The best setting is the
    one with the highest speedup by `rank_by`; `gap` = 1 - measured / predicted speedup at that setting."""
    entries = _entries(session, flt)
    query = select(entries).order_by(*board_order(entries, flt.rank_by)).offset(offset).limit(limit)
    rows = _with_open_alerts(session, flt, _named_rows(session, query))
    return [_entry(row, rank) for rank, row in enumerate(rows, start=offset + 1)]


def leaderboard_size(session: Session, flt: LeaderboardFilter) -> int:
    """How many entries the filter ranks."""
    return session.scalar(select(func.count()).select_from(_entries(session, flt))) or 0


def winners(session: Session, flt: LeaderboardFilter) -> list[PlaceWinner]:
    """The first entry of each (deployment, load) by measured speedup (ties: the leaderboard's order), with
    how many entries competed there (`candidates`) and the runner-up's measured speedup."""
    entries = _entries(session, LeaderboardFilter(**{**vars(flt), "rank_by": "measured"}))
    place = [entries.c.deployment_id, entries.c.concurrency]
    # the best speedup of each place first (a GROUP BY): only the entries reaching it are ordered by name
    key = func.coalesce(entries.c.measured_speedup, -1.0)
    places = (
        select(*place, func.max(key).label("best"), func.count().label("candidates"))
        .group_by(*place)
        .cte("places")
    )
    at = and_(
        places.c.deployment_id == entries.c.deployment_id, places.c.concurrency == entries.c.concurrency
    )
    tops = (
        select(
            entries,
            places.c.candidates,
            over(func.row_number(), partition_by=place, order_by=board_order(entries, "measured")).label(
                "place"
            ),
            over(func.count(), partition_by=place).label("ties"),
        )
        .join(places, and_(at, key == places.c.best))
        .subquery("tops")
    )
    # the runner-up: a tie for the first place, else the best speedup below it (-1: missing)
    below = (
        select(*place, func.max(key).label("second"))
        .join(places, and_(at, key < places.c.best))
        .group_by(*place)
    ).subquery("below")
    second = case((tops.c.ties > 1, tops.c.measured_speedup), else_=func.nullif(below.c.second, -1.0))
    query = (
        select(tops, second.label("runner_up_speedup"))
        .outerjoin(
            below,
            and_(below.c.deployment_id == tops.c.deployment_id, below.c.concurrency == tops.c.concurrency),
        )
        .where(tops.c.place == 1)
        .order_by(tops.c.deployment_id, tops.c.concurrency)
    )
    return [
        PlaceWinner(_entry(row, 1), int(row["candidates"]), _float(row["runner_up_speedup"]))
        for row in _with_open_alerts(session, flt, _named_rows(session, query))
    ]


def _entries(session: Session, flt: LeaderboardFilter):
    """The filter's entries, unordered, with names: the stored view when the store holds the source's
    (db/leaderboard_entries.py), else computed from the benchmarks (the same ranking: a store not refreshed since, a
    dataset of '', a source without gaps); `open_alerts` is filled in for the rows read."""
    if flt.dataset == "" or not leaderboard_entries.holds(session, flt.source):
        return ranked_entries(flt, flt.rank_by)
    stored = leaderboard_entries.TABLE
    view = [stored.c.source == flt.source, stored.c.rank_by == flt.rank_by]
    if flt.dataset is None:
        view.append(stored.c.across.is_(True))
    else:  # an entry on one dataset only is stored once, across datasets, naming it (db/leaderboard_entries.py)
        view += [stored.c.across.in_([False, True]), stored.c.dataset == flt.dataset]
    if flt.deployment_id is not None:
        view.append(stored.c.deployment_id == flt.deployment_id)
    if flt.concurrency is not None:
        view.append(stored.c.concurrency == flt.concurrency)
    return named_entries(stored, [], *view)


def _named_rows(session: Session, query: Select) -> list[dict[str, Any]]:
    """The query's rows by column name: the stored view and the entries computed on the spot order their
    columns apart (a page or the winners: a few hundred rows)."""
    result = session.connection().execute(query)
    names = list(result.keys())
    return [dict(zip(names, row, strict=True)) for row in result]


def _with_open_alerts(session: Session, flt: LeaderboardFilter, rows: list[dict]) -> list[dict]:
    """The rows with each entry's open alerts (raised, open verdicts of its competing benchmarks judged by
    the source), counted for these entries only; rows computed on the spot have them already."""
    if not rows or "open_alerts" in rows[0]:
        return rows
    checkpoints = sorted({int(row["checkpoint_id"]) for row in rows})
    counts = _open_alert_counts(session, flt, checkpoints)
    for row in rows:
        row["open_alerts"] = counts.get(tuple(int(row[name]) for name in ENTRY), 0)
    return rows


def _open_alert_counts(session: Session, flt: LeaderboardFilter, checkpoints: list[int]) -> dict:
    counts: dict[tuple[int, ...], int] = {}
    for start in range(0, len(checkpoints), 1000):
        rows = benchmark_rows(flt, checkpoints[start : start + 1000])
        query: Select = (
            select(*(rows.c[name] for name in ENTRY), func.sum(rows.c.open_alert))
            .where(rows.c.baseline_tps > 0)
            .group_by(*(rows.c[name] for name in ENTRY))
        )
        for *key, count in session.execute(query):
            counts[tuple(key)] = int(count or 0)
    return counts


def _entry(row: dict[str, Any], rank: int) -> RankedEntry:
    """An entry as the store returns it, typed: speedups as floats (PostgreSQL's means are decimals), the
    gap at the best setting, counts and the setting as integers."""
    measured, predicted = _float(row["measured_speedup"]), _float(row["predicted_speedup"])
    return RankedEntry(
        rank=rank,
        run=row["run"],
        checkpoint=row["checkpoint"],
        deployment=row["deployment"],
        concurrency=int(row["concurrency"]),
        speculative_algorithm=row["speculative_algorithm"],
        num_steps=_int(row["num_steps"]),
        topk=_int(row["topk"]),
        num_draft_tokens=_int(row["num_draft_tokens"]),
        measured_speedup=measured,
        predicted_speedup=predicted,
        gap=None if measured is None or not predicted else 1 - measured / predicted,
        error_band=_float(row["error_band"]),
        measured_tps=_float(row["measured_tps"]),
        predicted_tps=_float(row["predicted_tps"]),
        baseline_tps=_float(row["baseline_tps"]),
        datasets=_int(row["datasets"]),
        benchmarks=_int(row["benchmarks"]),
        open_alerts=_int(row["open_alerts"]),
        checkpoint_id=int(row["checkpoint_id"]),
        deployment_id=int(row["deployment_id"]),
        target_model=row["target_model"],
    )


def _float(value) -> float | None:
    return None if value is None else float(value)


def _int(value) -> int | None:
    return None if value is None else int(value)
