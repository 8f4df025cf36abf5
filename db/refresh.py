"""Recompute the predictions (db/predictions.py), gaps (db/gaps.py) and each benchmark's verdict
(db/verdicts.py) of stored benchmarks: which benchmarks a change touches, and in what batches.

What every batch shares is read once (db/refresh_context.py); each batch reads what the cost model needs
as plain rows, calls costmodel/, and writes back in bulk only the predictions, gaps and verdicts whose
numbers changed; the status and note of an existing alert are kept. No ORM object per benchmark: tens of
thousands take seconds."""

import gc
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from sqlalchemy import ColumnElement, Select, or_, select, true
from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.throughput import draft_steps
from specdash.db import board, bulk
from specdash.db.bulk import analyze_written, chunks, expire_loaded, select_in
from specdash.db.gaps import refresh_gaps
from specdash.db.history import acceptance_references
from specdash.db.loadmodels import fitted_estimates
from specdash.db.models import Alert, Benchmark, Checkpoint, Gap, ParameterSet, Prediction
from specdash.db.parameters import load_baselines
from specdash.db.predictions import (
    BENCHMARK_COLUMNS,
    BenchmarkRow,
    Groups,
    prediction_key,
    refresh_predictions,
)
from specdash.db.refresh_context import RefreshContext, read_context
from specdash.db.refresh_summary import RefreshSummary
from specdash.db.repeats import repeated_baselines

BATCH = 10_000  # benchmarks refreshed at a time


@contextmanager
def _gc_paused() -> Iterator[None]:
    """A refresh allocates a few objects per benchmark, none in reference cycles; the cyclic collector
    would otherwise walk every live object of the process (a dashboard's, a benchmark harness's) many
    times over. Paused for the refresh, it runs once afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def refresh(session: Session, benchmark_ids: Iterable[int] | None = None) -> RefreshSummary:
    """Predictions for every (checkpoint, deployment, setting, concurrency, dataset) among the benchmarks
    in scope (all, or those given and what a new baseline affects), and their gaps."""
    with _gc_paused():
        return _refresh(session, benchmark_ids)


def _refresh(session: Session, benchmark_ids: Iterable[int] | None) -> RefreshSummary:
    session.flush()  # what the caller added is read back below as rows
    summary = RefreshSummary()
    scope, deployment_ids, given = _scope(session, benchmark_ids)
    if not scope:
        return summary
    everything = benchmark_ids is None
    # a refresh of some benchmarks reads only what their checkpoints and deployments need
    context = read_context(
        session, None if everything else sorted(scope), None if everything else sorted(deployment_ids)
    )
    in_scope = sum(map(len, scope.values()))
    analyze_written(session, (Benchmark, Checkpoint), in_scope)  # a file's benchmarks, stored just now
    # A few checkpoints at a time, and their groups in batches: memory stays bounded by the largest
    # drafter's benchmarks, however many a file brings.
    for checkpoint_ids in _checkpoint_batches(scope):
        benches = _rows(session, [i for c in checkpoint_ids for i in scope[c]])
        summary.benchmarks += len(benches)
        groups, unknown_depth = _groups(benches)
        summary.skipped += unknown_depth
        # drafters without training metrics: their own earlier benchmarks say what accept length to expect
        untrained = [c for c in checkpoint_ids if not context.drafters[c].rates]
        # only a drafter's own new benchmarks change its references (a baseline changes none)
        backfilled = [c for c in untrained if c in given]
        if not everything and backfilled:
            _add_backfilled(session, groups, backfilled, {b.id for b in benches})
            context = _with_baselines_of(session, context, groups, deployment_ids)
        part = replace(context, references=acceptance_references(session, untrained, _datasets(groups)))
        _refresh_batches(session, groups, part, summary, checkpoint_ids)
        if summary.benchmarks == len(benches):  # the first batch's writes: the statements after it
            analyze_written(session, (Prediction, Gap, Alert), in_scope)
        if not everything:  # the Leaderboard's entries of these checkpoints where refreshed (db/board.py)
            board.update_at(session, _places(benches, groups))
    summary.refitted = [context.deployments[d].name for d in context.refitted]
    if everything:
        board.update(session, None)
    expire_loaded(session, (Prediction, Gap, Alert))
    return summary


def _refresh_batches(
    session: Session,
    groups: Groups,
    context: RefreshContext,
    summary: RefreshSummary,
    checkpoint_ids: list[int],
) -> None:
    batches = list(_batches(groups))
    # one batch holds these checkpoints whole: their predictions are read by checkpoint, in a few
    # statements; a drafter split over batches reads each batch's own by key
    whole = checkpoint_ids if len(batches) == 1 else None
    for batch in batches:
        predictions, made, skipped = refresh_predictions(session, batch, context, whole)
        gaps, new_alerts = refresh_gaps(session, batch, predictions, context)
        summary.predictions += made
        summary.skipped += skipped
        summary.gaps += gaps
        summary.new_alerts += new_alerts


def _scope(
    session: Session, benchmark_ids: Iterable[int] | None
) -> tuple[dict[int, list[int]], set[int], set[int]]:
    """The speculative benchmarks to refresh (all, or those given and every one whose baseline a given
    no-speculation benchmark changes), as ids per checkpoint; their deployments; and the checkpoints of
    the given speculative benchmarks (every one's, for all)."""
    # reads go through the Core connection: column tuples without the ORM's result machinery
    connection = session.connection()
    query = select(Benchmark.checkpoint_id, Benchmark.id, Benchmark.deployment_id).where(
        Benchmark.checkpoint_id.is_not(None), Benchmark.speculative_algorithm.is_not(None)
    )
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
        return _sorted(scope), deployment_ids, set(scope)
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
    for cid, i, deployment_id, concurrency, dataset, algorithm in select_in(
        session, touched, Benchmark.id, list(benchmark_ids)
    ):
        if algorithm is None:
            new_baselines[deployment_id].append((concurrency, dataset or ""))
            baseline_ids.append(i)
        elif cid is not None:
            add(((cid, i, deployment_id),))
    given = set(scope)
    # a repeat changes its deployment's noise, the floor of every band there
    everywhere = repeated_baselines(session, baseline_ids) if baseline_ids else set()
    for deployment_id, keys in new_baselines.items():
        add(_baseline_reach(session, query, deployment_id, None if deployment_id in everywhere else keys))
    return _sorted(scope), deployment_ids, given


def _datasets(groups: Groups) -> set[str] | None:
    """The datasets of these groups ("" for none); None (any) for more than an IN list's worth."""
    datasets = {key.dataset or "" for key in groups}
    return None if len(datasets) > bulk.CHUNK // 2 else datasets


def _places(benches: list[BenchmarkRow], groups: Groups) -> dict[int, set[tuple[int, int]]]:
    """Each checkpoint's (deployment, load) places among these benchmarks (and backfilled ones)."""
    places: dict[int, set[tuple[int, int]]] = defaultdict(set)
    for bench in benches:
        places[bench.checkpoint_id].add((bench.deployment_id, bench.concurrency))
    for key in groups:
        places[key.checkpoint_id].add((key.deployment_id, key.concurrency))
    return places


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


def _rows(session: Session, ids: list[int]) -> list[BenchmarkRow]:
    """The cost model's columns (BENCHMARK_COLUMNS) of these benchmarks, in id order."""
    connection = session.connection()
    query = select(*BENCHMARK_COLUMNS).order_by(Benchmark.id)
    make = BenchmarkRow._make
    return [
        make(row)
        for chunk in chunks(ids)
        for row in connection.execute(query.where(Benchmark.id.in_(chunk))).all()
    ]


def _groups(benches: list[BenchmarkRow]) -> tuple[Groups, int]:
    """The benchmarks by prediction key, and how many were left out: a tree that does not say K."""
    groups: Groups = defaultdict(list)
    skipped = 0
    for bench in benches:
        steps = draft_steps(bench.num_steps, bench.topk, bench.num_draft_tokens)
        if steps is None:
            skipped += 1
            continue
        groups[prediction_key(bench, steps)].append(bench)
    return groups, skipped


def _add_backfilled(session: Session, groups: Groups, untrained: list[int], known: set[int]) -> None:
    """A benchmark measured before stored ones (a backfill) changes their references: the untrained
    drafters' other benchmarks are judged again."""
    query = select(*BENCHMARK_COLUMNS).where(Benchmark.speculative_algorithm.is_not(None))
    for row in select_in(session, query, Benchmark.checkpoint_id, untrained):
        bench = BenchmarkRow._make(row)
        steps = draft_steps(bench.num_steps, bench.topk, bench.num_draft_tokens)
        if bench.id not in known and steps is not None:
            groups[prediction_key(bench, steps)].append(bench)
            known.add(bench.id)


def _with_baselines_of(
    session: Session, context: RefreshContext, groups: Groups, deployment_ids: set[int]
) -> RefreshContext:
    """The context with the baselines and estimates of every deployment among `groups` (backfilled
    benchmarks may be on deployments the given ones are not); `deployment_ids`, those read so far, grows
    with them."""
    needed = {key.deployment_id for key in groups}
    if needed <= deployment_ids:
        return context
    fitted = fitted_estimates(session, sorted(needed - deployment_ids), keep=True)
    deployment_ids |= needed
    return replace(
        context,
        baselines=load_baselines(session, deployment_ids=sorted(deployment_ids)),
        estimates={**context.estimates, **fitted.estimates},
        refitted=(*context.refitted, *fitted.refitted),
    )


def _checkpoint_batches(scope: dict[int, list[int]]) -> Iterator[list[int]]:
    """Consecutive checkpoints with about BATCH benchmarks in all (a checkpoint is never split)."""
    batch: list[int] = []
    size = 0
    for checkpoint_id in sorted(scope):
        batch.append(checkpoint_id)
        size += len(scope[checkpoint_id])
        if size >= BATCH:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _batches(groups: Groups) -> Iterator[Groups]:
    """Consecutive groups of about BATCH benchmarks in all (a group is never split)."""
    batch: Groups = {}
    size = 0
    for key, members in groups.items():
        batch[key] = members
        size += len(members)
        if size >= BATCH:
            yield batch
            batch, size = {}, 0
    if batch:
        yield batch
