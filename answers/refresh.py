"""Recompute the predictions, gaps and each benchmark's verdict of stored benchmarks: which benchmarks a
change touches (db/refresh_scope.py), in what batches, each judged by answers/judging.judge_batch and
written back through the store's one row sync (db/stored.py) where its numbers changed; the status and
note of an existing alert are kept unless the verdict decides them (answers/verdicts.settle_alert). No ORM
object per benchmark: tens of thousands take seconds."""

import gc
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime
from operator import attrgetter
from typing import Any, NamedTuple, cast

from sqlalchemy.orm import Session

from specdash.answers.judging import Judgement, judge_batch
from specdash.answers.refresh_context import refresh_context, widen_context
from specdash.answers.verdicts import REFRESH_WHO, settle_alert
from specdash.costmodel.throughput import draft_steps
from specdash.db import bulk, leaderboard_entries
from specdash.db.bulk import analyze_written, expire_loaded
from specdash.db.engine import bounded_sorts
from specdash.db.history import acceptance_references, appended_drafters
from specdash.db.models import Alert, Benchmark, Checkpoint, Gap, Prediction
from specdash.db.refresh_scope import (
    benchmark_rows,
    checkpoint_places,
    drafter_rows,
    group_members,
    refresh_scope,
    with_deployments,
)
from specdash.db.stored import (
    StoredPredictions,
    stored_alerts,
    stored_gaps,
    stored_predictions,
    write_alerts,
    write_gaps,
    write_predictions,
)
from specdash.rows import (
    AlertValues,
    BenchmarkRow,
    Groups,
    PredictionKey,
    Reference,
    RefreshContext,
    prediction_key,
)
from specdash.summaries import RefreshSummary

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


def refresh(
    session: Session,
    benchmark_ids: Iterable[int] | None = None,
    *,
    rank_all: bool = False,
    appended: bool = False,
) -> RefreshSummary:
    """Predictions for every (checkpoint, deployment, setting, concurrency, dataset) among the benchmarks
    in scope (all, or those given and what a new baseline affects), and their gaps; then the Leaderboard's
    entries of the checkpoints in scope. A refresh of all ranks again only the checkpoints whose
    predictions or gaps it wrote: every other write an entry is computed from (benchmarks, superseding,
    profiles, external predictions) keeps the entries itself; `rank_all` ranks every entry again, for a
    caller that changed those and refreshes everything. `appended`: the benchmarks given were stored just
    now and nothing else of theirs changed (an ingest that replaced no file), so an untrained drafter's
    other benchmarks are judged again only where a new one comes before them
    (db/history.appended_drafters)."""
    with _gc_paused():
        ids = (
            benchmark_ids if benchmark_ids is None or isinstance(benchmark_ids, list) else list(benchmark_ids)
        )
        return _refresh(session, ids, rank_all, min(ids, default=None) if appended and ids else None)


def _refresh(
    session: Session, benchmark_ids: list[int] | None, rank_all: bool, first_new: int | None
) -> RefreshSummary:
    session.flush()  # what the caller added is read back below as rows
    summary = RefreshSummary()
    scope, deployment_ids, given = refresh_scope(session, benchmark_ids)
    if not scope:
        return summary
    everything = benchmark_ids is None
    # a refresh of some benchmarks reads only what their checkpoints and deployments need
    context = refresh_context(
        session, None if everything else sorted(scope), None if everything else sorted(deployment_ids)
    )
    if not everything and context.refitted:
        # a load model fitted again moves the estimated baseline of every benchmark on its deployment:
        # they are judged again, their drafters read (the fit is stored: the second read reuses it)
        scope = with_deployments(session, scope, context.refitted)
        wider = refresh_context(session, sorted(scope), sorted(deployment_ids))
        context = replace(wider, refitted=context.refitted)
    in_scope = sum(map(len, scope.values()))
    analyze_written(session, (Benchmark, Checkpoint), in_scope)  # a file's benchmarks, stored just now
    places: list[dict[int, set[tuple[int, int]]]] = []
    # A few checkpoints at a time, a large one's groups over several parts: memory stays bounded by a
    # batch's benchmarks, however many a file or one drafter brings.
    untrained = _Untrained(set(), set()) if everything else _untrained(session, context, given, first_new)
    split_of = None  # the checkpoint the previous part held part of
    written: set[int] = set()  # the checkpoints whose predictions or gaps were written
    for n, part in enumerate(_parts(session, scope, untrained.backfilled)):
        context, at = _refresh_part(session, part, context, summary, untrained, deployment_ids, written)
        if n == 0:  # the first batch's writes: the statements after it
            analyze_written(session, (Prediction, Gap, Alert), in_scope)
        if everything:
            continue
        # where each batch refreshed its checkpoints' Leaderboard entries; a split drafter's at once
        if part.split_of is not None and part.split_of == split_of:
            for checkpoint_id, where in at.items():
                places[-1].setdefault(checkpoint_id, set()).update(where)
        else:
            places.append(at)
        split_of = part.split_of
    summary.refitted = [context.deployments[d].name for d in context.refitted]
    # the Leaderboard's entries (db/leaderboard_entries.py) once every batch is written: a first refresh
    # ranks every entry once, not again for each later batch
    with bounded_sorts(session):  # its statements sort every gap of the checkpoints they rank
        if everything:
            whole = rank_all or len(written) == len(scope)
            leaderboard_entries.update(session, None if whole else written)
        else:
            leaderboard_entries.update_at(session, places)
    expire_loaded(session, (Prediction, Gap, Alert))
    return summary


class _Untrained(NamedTuple):
    """The given drafters without training metrics whose other benchmarks are judged again: all of them
    (`backfilled`: their references changed), or those of the new benchmarks' groups (`grouped`)."""

    backfilled: set[int]
    grouped: set[int]


def _untrained(
    session: Session, context: RefreshContext, given: dict[int, int], first_new: int | None
) -> _Untrained:
    """Every given untrained drafter (`given`: the checkpoints with how many benchmarks each was given)
    is backfilled, unless the given benchmarks are new ones (ids from `first_new`) that come after the
    drafter's others (db/history.appended_drafters); then, where it has others, their groups' members
    are judged again."""
    untrained = {c for c in given if not context.drafters[c].rates}
    if first_new is None or not untrained:
        return _Untrained(untrained, set())
    after = appended_drafters(session, {c: given[c] for c in untrained}, first_new)
    return _Untrained(untrained - set(after), {c for c, others in after.items() if others})


def _refresh_part(
    session: Session,
    part: "_Part",
    context: RefreshContext,
    summary: RefreshSummary,
    reach: "_Untrained",
    deployment_ids: set[int],
    written: set[int],
) -> tuple[RefreshContext, dict[int, set[tuple[int, int]]]]:
    """Refresh one part's benchmarks (the checkpoints whose predictions or gaps it wrote added to
    `written`); returns the context (wider when backfilled benchmarks are on other deployments) and the
    part's Leaderboard places."""
    benches = benchmark_rows(session, part.benchmark_ids)
    summary.benchmarks += len(benches)
    groups, unknown_depth = _groups(benches)
    summary.skipped += unknown_depth
    # drafters without training metrics: their own earlier benchmarks say what accept length to expect
    untrained = [c for c in part.checkpoint_ids if not context.drafters[c].rates]
    # only a drafter's own new benchmarks change its references (a baseline changes none): its other
    # benchmarks are judged again, those of this part's groups when it is split
    drafters = [c for c in untrained if c in reach.backfilled]
    if drafters:
        others = (
            drafter_rows(session, drafters)
            if part.split_of is None
            else benchmark_rows(session, list(part.others))
        )
        _add_backfilled(groups, others, {b.id for b in benches})
        context = widen_context(session, context, {key.deployment_id for key in groups}, deployment_ids)
    references = acceptance_references(session, untrained, _datasets(groups))
    grouped = {c for c in untrained if c in reach.grouped}
    if grouped:
        _add_members(session, groups, grouped, references, {b.id for b in benches})
    # a part that holds its checkpoints whole reads their predictions by checkpoint
    whole = part.checkpoint_ids if part.split_of is None else None
    _refresh_batches(session, groups, replace(context, references=references), summary, whole, written)
    return context, _places(benches, groups)


def _refresh_batches(
    session: Session,
    groups: Groups,
    context: RefreshContext,
    summary: RefreshSummary,
    checkpoint_ids: list[int] | None,
    written: set[int],
) -> None:
    batches = list(_batches(groups))
    # one batch holds these checkpoints whole (when given): their predictions are read by checkpoint,
    # in a few statements; a drafter split over batches reads each batch's own by key
    whole = checkpoint_ids if len(batches) == 1 else None
    for batch in batches:
        stored = stored_predictions(session, batch, whole)
        external = {key: {s: v for s, (_, v) in sources.items()} for key, sources in stored.external.items()}
        judgement = judge_batch(batch, context, external)
        summary.predictions += judgement.made
        summary.skipped += judgement.skipped
        summary.gaps += len(judgement.gaps)
        summary.new_alerts += _write(session, batch, judgement, stored, context, written)


def _write(
    session: Session,
    groups: Groups,
    judgement: Judgement,
    stored: StoredPredictions,
    context: RefreshContext,
    written: set[int],
) -> int:
    """A batch's judgement written where it changed: predictions, then gaps against their ids, then the
    alerts; returns how many alerts were newly raised. The checkpoints of the predictions written and of
    the gaps inserted go to `written` (an entry reads a gap's prediction, not the gap's own values)."""
    now = context.now
    wanted = {key + (source,): values for (key, source), values in judgement.predictions.items()}
    predictions = write_predictions(session, wanted, stored.builtin, now)
    # a prediction's row key starts with its checkpoint (db/stored.PREDICTION_ROW_KEY)
    written.update(key[0] for key in (*predictions.inserted, *predictions.rewritten))
    prediction_ids = predictions.ids
    for key, sources in stored.external.items():
        for source, (prediction_id, _) in sources.items():
            prediction_ids[key + (source,)] = prediction_id
    gaps = {
        (benchmark_id, prediction_ids[key + (source,)]): values
        for (benchmark_id, key, source), values in judgement.gaps.items()
    }
    synced = write_gaps(session, gaps, stored_gaps(session, list(judgement.verdicts)), now)
    if synced.inserted:
        checkpoint_of = {bench.id: key.checkpoint_id for key, group in groups.items() for bench in group}
        written.update(checkpoint_of[benchmark_id] for benchmark_id, _ in synced.inserted)
    return _write_alerts(session, groups, judgement, prediction_ids, synced.ids, now)


def _write_alerts(
    session: Session,
    groups: Groups,
    judgement: Judgement,
    prediction_ids: dict[tuple[Any, ...], int],
    gap_ids: dict[tuple[Any, ...], int],
    now: datetime,
) -> int:
    """Each benchmark's alert as its verdict settles it (answers/verdicts.settle_alert), written where it
    changed with the history of each status moved; returns how many alerts were newly raised."""
    source_of_gap = _SourceOfGap(judgement, prediction_ids, gap_ids)
    superseded = {b.id for group in groups.values() for b in group if b.superseded_by_id is not None}
    alerts = stored_alerts(session, sorted(judgement.verdicts))
    wanted: dict[tuple[Any, ...], AlertValues] = {}
    events = []
    raised = 0
    for benchmark_id in sorted(judgement.verdicts):
        verdict = judgement.verdicts[benchmark_id]
        old = alerts.get((benchmark_id,))
        gap_id = gap_ids.get((benchmark_id, prediction_ids[verdict.key + (verdict.source,)]))
        change = settle_alert(
            cast(AlertValues, old.values) if old is not None else None,  # stored_alerts reads AlertValues
            verdict,
            gap_id,
            source_of_gap,
            benchmark_id in superseded,
        )
        wanted[(benchmark_id,)] = change.values
        if change.event is not None:
            events.append((benchmark_id, *change.event))
        raised += change.raised
    write_alerts(session, wanted, alerts, events, REFRESH_WHO, now)
    return raised


class _SourceOfGap:
    """The source of a gap's prediction among those judged (None for another), for the history of an
    alert a new source resolves: worked out at the first such alert, rare among many."""

    def __init__(self, judgement: Judgement, prediction_ids: dict, gap_ids: dict) -> None:
        self.judgement, self.prediction_ids, self.gap_ids = judgement, prediction_ids, gap_ids
        self.sources: dict[int, str | None] | None = None

    def __call__(self, gap_id: int) -> str | None:
        if self.sources is None:
            ids = self.prediction_ids
            of_prediction = {ids[key + (source,)]: source for (_, key, source) in self.judgement.gaps}
            self.sources = {gap: of_prediction.get(pair[1]) for pair, gap in self.gap_ids.items()}
        return self.sources.get(gap_id)


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


def _groups(benches: list[BenchmarkRow]) -> tuple[Groups, int]:
    """The benchmarks by prediction key, and how many were left out: a tree that does not say K."""
    groups: Groups = defaultdict(list)
    skipped = 0
    for bench in benches:
        key = _key_of(bench)
        if key is None:
            skipped += 1
            continue
        groups[key].append(bench)
    return groups, skipped


def _key_of(bench: BenchmarkRow) -> PredictionKey | None:
    """The key of a benchmark's prediction group; None for a tree that does not say K."""
    steps = draft_steps(bench.num_steps, bench.topk, bench.num_draft_tokens)
    return None if steps is None else prediction_key(bench, steps)


def _add_members(
    session: Session,
    groups: Groups,
    checkpoint_ids: set[int],
    references: Mapping[int, Reference],
    known: set[int],
) -> None:
    """The stored members of these drafters' groups that a new benchmark joining them changes, judged
    again with it. An untrained drafter's group is predicted at the accept length of its latest
    benchmark's reference (else at the mean of its measured ones), and each member with a reference of
    its own is judged at that one, with the group's costs: so while the group's latest had a reference
    and every new one has, only the members without one (the first of a series) are judged again, and
    the group's first, whose algorithm names the family. Otherwise every member is."""
    places = [(k.checkpoint_id, k.deployment_id, k.concurrency, k.dataset) for k in groups]
    members: dict[PredictionKey, list[BenchmarkRow]] = defaultdict(list)
    keys: dict[tuple[Any, ...], PredictionKey | None] = {}  # a group's members share their key's columns
    for member in group_members(session, [place for place in places if place[0] in checkpoint_ids]):
        if member.id in known:
            continue
        columns = member[1:9]  # checkpoint, deployment, setting, load and dataset: what the key is made of
        if columns not in keys:
            keys[columns] = _key_of(member)
        key = keys[columns]
        if key is not None and key in groups:
            members[key].append(member)
    for key, others in members.items():
        others.sort(key=attrgetter("id"))
        held = others[-1].id in references and all(b.id in references for b in groups[key])
        again = [b for n, b in enumerate(others) if n == 0 or b.id not in references] if held else others
        groups[key] = sorted([*groups[key], *again], key=attrgetter("id"))  # as a full refresh reads them


def _add_backfilled(groups: Groups, rows: Iterable[BenchmarkRow], known: set[int]) -> None:
    """A benchmark measured before stored ones (a backfill) changes their references: the untrained
    drafters' other benchmarks (`rows`) are judged again."""
    added = set()
    for bench in rows:
        key = _key_of(bench) if bench.id not in known else None
        if key is not None:
            groups[key].append(bench)
            known.add(bench.id)
            added.add(key)
    for key in added:  # in id order, as a full refresh reads them: a group's first names its family
        groups[key].sort(key=attrgetter("id"))


class _Part(NamedTuple):
    """Benchmarks refreshed together: whole checkpoints, or whole prediction groups of one checkpoint too
    large for a batch (`split_of`) with, for a backfilled drafter, its other benchmarks in those groups."""

    checkpoint_ids: list[int]
    benchmark_ids: list[int]
    split_of: int | None = None
    others: tuple[int, ...] = ()


def _parts(session: Session, scope: dict[int, list[int]], backfilled: set[int]) -> Iterator[_Part]:
    """The scope in parts of about BATCH benchmarks: consecutive checkpoints, a larger one on its own
    over several parts."""
    for checkpoint_ids in _checkpoint_batches(scope):
        first = checkpoint_ids[0]
        if len(checkpoint_ids) > 1 or len(scope[first]) <= BATCH:
            yield _Part(checkpoint_ids, [i for c in checkpoint_ids for i in scope[c]])
            continue
        # a backfilled drafter's other benchmarks are judged again: they go with the part of their group
        ids = set(scope[first])
        places = checkpoint_places(session, first, None if first in backfilled else scope[first])
        for members in _split(places):
            mine = [i for i in members if i in ids]
            yield _Part([first], mine, first, tuple(i for i in members if i not in ids))


def _split(places: Iterable[tuple[int, int, int, str | None]]) -> Iterator[list[int]]:
    """Benchmark ids, from their (id, deployment, load, dataset), in parts of about BATCH that never split
    a prediction group (which has one deployment, load and dataset), a dataset's groups together where
    they fit: a part's acceptance references are read for its datasets only."""
    units: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for benchmark_id, deployment_id, concurrency, dataset in places:
        units[(dataset or "", deployment_id, concurrency)].append(benchmark_id)
    part: list[int] = []
    for unit in sorted(units):
        part += units[unit]
        if len(part) >= BATCH:
            yield sorted(part)
            part = []
    if part:
        yield sorted(part)


def _checkpoint_batches(scope: dict[int, list[int]]) -> Iterator[list[int]]:
    """Consecutive checkpoints with about BATCH benchmarks in all; one with more than BATCH on its own
    (_parts splits it)."""
    batch: list[int] = []
    size = 0
    for checkpoint_id in sorted(scope):
        if len(scope[checkpoint_id]) > BATCH and batch:
            yield batch
            batch, size = [], 0
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
