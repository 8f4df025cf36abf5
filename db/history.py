"""What a drafter's own earlier benchmarks say its accept length should be: the reference a drafter without
training metrics is predicted and judged by (the "history" source of costmodel/sources.py)."""

import statistics
from collections import defaultdict
from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.diagnoses import normalised_algorithm
from specdash.costmodel.domain import Setting
from specdash.costmodel.throughput import draft_steps
from specdash.db.bulk import select_in
from specdash.db.models import Benchmark, Checkpoint, Run
from specdash.rows import Reference

# At most this many of a drafter's latest earlier benchmarks make its accept-length reference.
HISTORY_WINDOW = 5

_SERIES_COLUMNS = (
    Benchmark.id,
    Benchmark.checkpoint_id,
    Benchmark.dataset,
    Benchmark.num_steps,
    Benchmark.topk,
    Benchmark.num_draft_tokens,
    Benchmark.concurrency,
    Benchmark.accept_length,
    Benchmark.speculative_algorithm,
    Benchmark.draft_hidden_size,
    Benchmark.superseded_by_id,
    Benchmark.measured_at,
    Run.speculative_algorithm.label("drafter_algorithm"),
    Run.hidden_size.label("drafter_hidden_size"),
)


class SeriesRow(NamedTuple):
    """A benchmark of a drafter's series (_SERIES_COLUMNS, in order): a plain named tuple, whose fields
    read in C (a SQLAlchemy Row's by name cost several times as much, a score of times a benchmark)."""

    id: int
    checkpoint_id: int
    dataset: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    accept_length: float | None
    speculative_algorithm: str | None
    draft_hidden_size: int | None
    superseded_by_id: int | None
    measured_at: datetime | None
    drafter_algorithm: str | None
    drafter_hidden_size: int | None


def acceptance_references(
    session: Session, checkpoint_ids: Sequence[int], datasets: Collection[str] | None = None
) -> "References":
    """For every benchmark of these checkpoints (drafters without training metrics; on these datasets only,
    "" for none, when given: a series is of one dataset), the median measured
    accept length of the same drafter's trusted benchmarks on the same dataset and setting: the
    latest earlier ones (by measured_at when every one has it, else by id) at the same load, else at other
    loads; none for the first of its series.
    Trusted: not superseded, served with the drafter's own algorithm and hidden size, tau reported."""
    picks: dict[int, tuple[SeriesRow, list[SeriesRow], str, str]] = {}
    if checkpoint_ids:
        for (_, dataset, steps, topk, tokens), members in _series(session, checkpoint_ids, datasets).items():
            setting = f"{steps}/{topk}/{tokens or '-'}"
            for bench, pick in _earlier(members):
                picks[bench.id] = (bench, pick, dataset, setting)
    return References(picks)


class References(Mapping[int, Reference]):
    """Each benchmark's reference (acceptance_references), made when first asked for: which benchmarks
    have one is known from the walk of their series, while a refresh of one window of a live drafter's
    thousands asks for the references of a few."""

    def __init__(self, picks: dict[int, tuple[SeriesRow, list[SeriesRow], str, str]]) -> None:
        self._picks = picks
        self._made: dict[int, Reference] = {}

    def __getitem__(self, benchmark_id: int) -> Reference:
        made = self._made.get(benchmark_id)
        if made is None:
            made = self._made[benchmark_id] = _reference(*self._picks[benchmark_id])
        return made

    def get(self, benchmark_id: int, default: Any = None) -> Any:
        return self[benchmark_id] if benchmark_id in self._picks else default

    def __contains__(self, benchmark_id: object) -> bool:
        return benchmark_id in self._picks

    def __iter__(self) -> Iterator[int]:
        return iter(self._picks)

    def __len__(self) -> int:
        return len(self._picks)


def _reference(bench: SeriesRow, pick: list[SeriesRow], dataset: str, setting: str) -> Reference:
    load = "the same" if pick[0].concurrency == bench.concurrency else "other"
    ids = tuple(m.id for m in pick)
    tau = statistics.median(m.accept_length for m in pick if m.accept_length)  # trusted: each has one
    return Reference(
        tau,
        ids,
        f"the median {tau:.2f} of its {len(ids)} earlier benchmark(s) on {dataset or 'the same dataset'} "
        f"at setting {setting} and {load} load ({', '.join(f'#{i}' for i in ids)})",
    )


def appended_drafters(session: Session, new: Mapping[int, int], first: int) -> dict[int, int]:
    """The checkpoints (keys of `new`, each with how many of its benchmarks were stored just now, their
    ids `first` or above, nothing of it deleted) whose new benchmarks come after every other one of theirs
    in the order their series are walked (_earlier), with how many others each has: no other benchmark's
    reference changes, so none is judged again for it. A series is in measured_at order when every member
    has one, else in id order: the new ones come after when their ids are the largest and either no other
    is dated, or every new one is dated at or after every other."""
    new_row, old_row = Benchmark.id >= first, Benchmark.id < first
    when = Benchmark.measured_at
    query = (
        select(
            Benchmark.checkpoint_id,
            func.count(case((new_row, 1))),
            func.count(case((new_row, when))),
            func.min(case((new_row, when))),
            func.count(case((old_row, 1))),
            func.count(case((old_row, when))),
            func.max(case((old_row, when))),
        )
        .where(Benchmark.speculative_algorithm.is_not(None))
        .group_by(Benchmark.checkpoint_id)
    )
    counts = {row[0]: row[1:] for row in select_in(session, query, Benchmark.checkpoint_id, sorted(new))}
    out = {}
    for checkpoint_id, count in new.items():
        mine, mine_dated, earliest, others, others_dated, latest = counts.get(
            checkpoint_id, (0, 0, None, 0, 0, None)
        )
        # every benchmark at or above the first new id is a new one (else an older one is among them)
        latest_ids = mine == count
        if not count or latest_ids and (others_dated == 0 or (mine_dated == mine and earliest >= latest)):
            out[checkpoint_id] = others
    return out


def _series(
    session: Session, checkpoint_ids: Sequence[int], datasets: Collection[str] | None
) -> dict[tuple[Any, ...], list[SeriesRow]]:
    """The checkpoints' speculative benchmarks (on these datasets, when given) by (checkpoint, dataset, K,
    topk, N)."""
    query = (
        select(*_SERIES_COLUMNS)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Checkpoint.run)
        .where(Benchmark.speculative_algorithm.is_not(None))
    )
    if datasets is not None:
        named = Benchmark.dataset.in_(sorted(set(datasets) - {""}))
        query = query.where(
            named | Benchmark.dataset.is_(None) | (Benchmark.dataset == "") if "" in datasets else named
        )
    series: dict[tuple[Any, ...], list[SeriesRow]] = defaultdict(list)
    # a drafter's series share a few settings: each one's K and width worked out once
    settings: dict[tuple[Any, ...], tuple[int, int] | None] = {}
    make = SeriesRow._make
    for row in map(make, select_in(session, query, Benchmark.checkpoint_id, checkpoint_ids)):
        setting = (row.num_steps, row.topk, row.num_draft_tokens)
        if setting not in settings:
            steps = draft_steps(*setting)
            settings[setting] = None if steps is None else (steps, Setting(None, steps, row.topk).width)
        known = settings[setting]
        if known is not None:
            key = (row.checkpoint_id, row.dataset or "", *known, row.num_draft_tokens)
            series[key].append(row)
    return series


def _earlier(members: list[SeriesRow]) -> list[tuple[SeriesRow, list[SeriesRow]]]:
    """Each benchmark of a series with the trusted ones before it that make its reference (the first of
    a series has none and is left out)."""
    dated = all(m.measured_at is not None for m in members)
    members.sort(key=lambda m: (m.measured_at, m.id) if dated else (m.id,))
    # one walk in order: the trusted ones so far, and per load (a live drafter's series runs to
    # hundreds of thousands: rescanning every earlier one per benchmark was quadratic)
    trusted: list[SeriesRow] = []
    trusted_at: dict[int, list[SeriesRow]] = defaultdict(list)
    out = []
    for bench in members:
        pick = _nearest(trusted, trusted_at.get(bench.concurrency))
        if pick:
            out.append((bench, pick))
        if _trusted(bench):
            trusted.append(bench)
            trusted_at[bench.concurrency].append(bench)
    return out


def _trusted(row: SeriesRow) -> bool:
    if row.superseded_by_id is not None or not row.accept_length or row.accept_length <= 0:
        return False
    served, trained = (
        normalised_algorithm(row.speculative_algorithm),
        normalised_algorithm(row.drafter_algorithm),
    )
    if served and trained and served != trained:
        return False
    fed, expected = row.draft_hidden_size, row.drafter_hidden_size
    return not (fed and expected and fed != expected)


def _nearest(earlier: list[SeriesRow], same_load: list[SeriesRow] | None) -> list[SeriesRow]:
    """Same load first, else other loads; the latest ones, at most HISTORY_WINDOW."""
    return (same_load or earlier)[-HISTORY_WINDOW:]
