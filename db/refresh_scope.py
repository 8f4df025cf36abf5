"""Which stored benchmarks a refresh covers (all, or those given and every one a new baseline reaches) and
their rows as the cost model reads them (BenchmarkRow)."""

from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import Any

from sqlalchemy import ColumnElement, Select, or_, select, true
from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.db import bulk
from specdash.db.bulk import select_in
from specdash.db.models import BENCHMARK_SETTING, Benchmark, ParameterSet
from specdash.db.parameters import load_baselines
from specdash.db.repeats import repeated_baselines
from specdash.rows import BenchmarkRow

# The cost model's columns of a benchmark, as a refresh reads them (BenchmarkRow's fields, in order).
BENCHMARK_COLUMNS = (
    Benchmark.id,
    Benchmark.checkpoint_id,
    Benchmark.deployment_id,
    *BENCHMARK_SETTING,
    Benchmark.decode_tps,
    Benchmark.accept_length,
    Benchmark.draft_hidden_size,
    Benchmark.input_tokens,
    Benchmark.output_tokens,
    Benchmark.superseded_by_id,
)


def refresh_scope(
    session: Session, benchmark_ids: Iterable[int] | None
) -> tuple[dict[int, list[int]], set[int], dict[int, int]]:
    """The speculative benchmarks to refresh (all, or those given and every one whose baseline a given
    no-speculation benchmark changes), as ids per checkpoint; their deployments; and the checkpoints of
    the given speculative benchmarks with how many of them each has (every one's, for all)."""
    # reads go through the Core connection: column tuples without the ORM's result machinery
    connection = session.connection()
    query = _SPECULATIVE
    # ids are added to `scope` as the rows arrive, a chunk at a time: a 300,000-benchmark file's rows
    # held in lists at once cost more memory than the refresh of any one batch of them
    scope: dict[int, set[int]] = defaultdict(set)
    deployment_ids: set[int] = set()

    def add(rows: Iterable[Any]) -> None:
        for checkpoint_id, benchmark_id, deployment_id in rows:
            scope[checkpoint_id].add(benchmark_id)
            deployment_ids.add(deployment_id)

    if benchmark_ids is None:
        add(connection.execute(query))
        return _sorted(scope), deployment_ids, {c: len(ids) for c, ids in scope.items()}
    touched = select(
        Benchmark.checkpoint_id,
        Benchmark.id,
        Benchmark.deployment_id,
        Benchmark.concurrency,
        Benchmark.dataset,
        Benchmark.speculative_algorithm,
    )
    new_baselines: dict[int, list[tuple[int, str]]] = defaultdict(list)
    baseline_ids = []
    given_ids = sorted(set(benchmark_ids))
    for cid, i, deployment_id, concurrency, dataset, algorithm in select_in(
        session, touched, Benchmark.id, given_ids
    ):
        if algorithm is None:
            new_baselines[deployment_id].append((concurrency, dataset or ""))
            baseline_ids.append(i)
        elif cid is not None:
            add(((cid, i, deployment_id),))
    given = {checkpoint_id: len(ids) for checkpoint_id, ids in scope.items()}
    # a repeat changes its deployment's noise, the floor of every band there
    everywhere = repeated_baselines(session, baseline_ids, new_baselines)
    if new_baselines and given_ids[-1] - given_ids[0] + 1 == len(given_ids):
        # every id from the first given to the last is given (a file's new benchmarks): the speculative
        # ones among them are in scope already, and the baselines' reach reads only the others (a first
        # load's reach is every benchmark of the file again: 225,000 rows of 300,000)
        query = query.where(or_(Benchmark.id < given_ids[0], Benchmark.id > given_ids[-1]))
    for deployment_id, keys in new_baselines.items():
        add(_baseline_reach(session, query, deployment_id, None if deployment_id in everywhere else keys))
    return _sorted(scope), deployment_ids, given


# Every speculative benchmark of a checkpoint, as refresh_scope reads them.
_SPECULATIVE = select(Benchmark.checkpoint_id, Benchmark.id, Benchmark.deployment_id).where(
    Benchmark.checkpoint_id.is_not(None), Benchmark.speculative_algorithm.is_not(None)
)


def with_deployments(
    session: Session, scope: dict[int, list[int]], deployment_ids: Iterable[int]
) -> dict[int, list[int]]:
    """The scope with every speculative benchmark on these deployments (a load model fitted again moves
    the estimated baseline of each), as ids per checkpoint."""
    wider: dict[int, set[int]] = defaultdict(set)
    for checkpoint_id, ids in scope.items():
        wider[checkpoint_id].update(ids)
    on = _SPECULATIVE.where(Benchmark.deployment_id.in_(sorted(set(deployment_ids))))
    for row in session.connection().execute(on):
        wider[row.checkpoint_id].add(row.id)
    return _sorted(wider)


def _sorted(scope: dict[int, set[int]]) -> dict[int, list[int]]:
    return {checkpoint_id: sorted(ids) for checkpoint_id, ids in scope.items()}


def _baseline_reach(
    session: Session, query: Select, deployment_id: int, new: list[tuple[int, str]] | None
) -> Iterable[Any]:
    """The speculative benchmarks (rows of `query`) whose predictions new baselines on this deployment at
    these (load, dataset) change (costmodel.sources.choose_baseline): those at these loads; at a load
    with no baseline of its own, those whose baseline is interpolated or carried from one of these loads,
    and those of these datasets (their own loads come first); and, when a calibrated set of the
    deployment is active (its fit is stated at a reference load) or `new` is None, every one on it."""
    connection = session.connection()
    on_deployment = query.where(Benchmark.deployment_id == deployment_id)
    calibrated = select(ParameterSet.id).where(
        ParameterSet.deployment_id == deployment_id,
        ParameterSet.is_active.is_(True),
        ParameterSet.source != PredictionSource.THEORY,
    )
    if new is None or connection.execute(calibrated.limit(1)).first() is not None:
        return connection.execute(on_deployment)
    measured = load_baselines(session, deployment_id=deployment_id).measured_loads(deployment_id)
    loads = sorted({concurrency for concurrency, _ in new})
    unmeasured = Benchmark.concurrency.not_in(sorted(measured))
    datasets = {dataset for _, dataset in new}
    reach = [Benchmark.concurrency.in_(loads), unmeasured & _of_datasets(datasets)]
    # an unmeasured load takes its baseline from the measured ones next to it (baseline_at_load); a new
    # load counts as a level even if its median is not positive (then it may have been one before)
    levels = sorted({load for load, tps in measured.items() if tps and tps > 0} | set(loads))
    for low, high in _neighbourhoods(levels, loads):
        reach.append(unmeasured & Benchmark.concurrency.between(low, high))
    return connection.execute(on_deployment.where(or_(*reach)))


def _of_datasets(datasets: set[str]) -> ColumnElement[bool]:
    """Benchmarks of these datasets ("" for none); of any, for more than an IN list's worth (a big file's
    baselines: its refresh reaches most of the store anyway)."""
    if len(datasets) > bulk.CHUNK // 2:  # read at each call: the test of big files lowers it
        return true()
    named = Benchmark.dataset.in_(sorted(datasets - {""}))
    if "" in datasets:  # a baseline without a dataset is the own one of benchmarks without one
        return named | Benchmark.dataset.is_(None) | (Benchmark.dataset == "")
    return named


def _neighbourhoods(levels: list[int], loads: list[int]) -> Iterator[tuple[int, int]]:
    """For each of `loads` (each one of the measured `levels`), the range between the levels next to it (to
    either end where it is the first or last): the unmeasured loads whose baseline it is a neighbour of."""
    for load in loads:
        at = levels.index(load)
        low = levels[at - 1] if at > 0 else -(2**31)
        high = levels[at + 1] if at + 1 < len(levels) else 2**31 - 1
        yield low, high


def benchmark_rows(session: Session, ids: list[int]) -> list[BenchmarkRow]:
    """The cost model's columns (BENCHMARK_COLUMNS) of these benchmarks, in id order."""
    return list(map(BenchmarkRow._make, select_in(session, _BENCHMARK_ROWS, Benchmark.id, ids)))


_BENCHMARK_ROWS = select(*BENCHMARK_COLUMNS).order_by(Benchmark.id)  # built once: select_in keeps its IN form


def drafter_rows(session: Session, checkpoint_ids: list[int]) -> Iterator[BenchmarkRow]:
    """Every speculative benchmark of these checkpoints (a backfill judges an untrained drafter's others
    again)."""
    query = select(*BENCHMARK_COLUMNS).where(Benchmark.speculative_algorithm.is_not(None))
    make = BenchmarkRow._make
    for row in select_in(session, query, Benchmark.checkpoint_id, checkpoint_ids):
        yield make(row)


def group_members(session: Session, places: Iterable[tuple[int, int, int, str]]) -> Iterator[BenchmarkRow]:
    """Every speculative benchmark at these (checkpoint, deployment, load, dataset) places ("" for none):
    the other members of new benchmarks' prediction groups (a superset: the setting is not compared)."""
    by_checkpoint: dict[int, set[tuple[int, int, str]]] = defaultdict(set)
    for checkpoint_id, deployment_id, concurrency, dataset in places:
        by_checkpoint[checkpoint_id].add((deployment_id, concurrency, dataset))
    query = select(*BENCHMARK_COLUMNS).where(Benchmark.speculative_algorithm.is_not(None))
    make = BenchmarkRow._make
    for checkpoint_id, at in by_checkpoint.items():
        where = (
            Benchmark.checkpoint_id == checkpoint_id,
            Benchmark.deployment_id.in_(sorted({d for d, _, _ in at})),
            Benchmark.concurrency.in_(sorted({n for _, n, _ in at})),
            _of_datasets({dataset for _, _, dataset in at}),
        )
        for row in session.connection().execute(query.where(*where)):
            member = make(row)
            if (member.deployment_id, member.concurrency, member.dataset or "") in at:
                yield member


def checkpoint_places(
    session: Session, checkpoint_id: int, ids: list[int] | None
) -> list[tuple[int, int, int, str | None]]:
    """(id, deployment, load, dataset) of these benchmarks of a checkpoint (None: of its every speculative
    one, as drafter_rows reads them): what a refresh splits a large drafter's benchmarks by."""
    query = select(Benchmark.id, Benchmark.deployment_id, Benchmark.concurrency, Benchmark.dataset)
    if ids is not None:
        return [(i, d, load, name) for i, d, load, name in select_in(session, query, Benchmark.id, ids)]
    where = (Benchmark.checkpoint_id == checkpoint_id, Benchmark.speculative_algorithm.is_not(None))
    return [(i, d, load, name) for i, d, load, name in session.connection().execute(query.where(*where))]
