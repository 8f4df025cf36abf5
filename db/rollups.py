"""Rollups of training metrics: a key's points summed per bucket of WIDTHS steps, so that a chart of a long
run reads a few thousand rows instead of millions of points (db/curves.py).

The rule that keeps them exact: for each (run, key, width) the rollup either covers every point of that run
and key, or holds no row. A key without rollups is decided while it has at most DECIDE_POINTS points
stored: after each write its stored points are looked at, and the widths at which they average at least
MIN_POINTS a bucket (fewer, and the rollup would cost a row per point or two for reads the points answer
as quickly) are built from them; never when a step is negative. A log followed a few lines at a time is
decided once enough of it is stored. Every later write to a kept rollup merges into it
(ingest/metric_points.py); deleting a run deletes its rollups.

Bucket b of width w holds the steps b*w to (b+1)*w - 1: integer division, exact for steps >= 0."""

from bisect import bisect_left
from collections.abc import Iterable, Sequence

from sqlalchemy import delete, exists, func, select, text
from sqlalchemy.orm import Session

from specdash.db.bulk import chunks, index_ends
from specdash.db.models import MetricKey, MetricPoint, MetricRollup

# Bucket widths in steps; a chart reads a key's widest kept one at most half a chart bucket wide.
WIDTHS = (64, 4096)
MIN_POINTS = 16
DECIDE_POINTS = 4096

COLUMNS = "run_id, key_id, width, bucket, n, sum_step, sum_value, min_value, max_value"


def pays(count: int, first: int, last: int, width: int) -> bool:
    """Whether `count` points logged from step `first` to `last` keep a rollup of `width`: at least
    MIN_POINTS a bucket over the buckets they span, and no negative step."""
    return first >= 0 and count >= MIN_POINTS * (last // width - first // width + 1)


def _where(run_id: int, key_id: int) -> tuple:
    return (MetricPoint.run_id == run_id, MetricPoint.key_id == key_id)


def kept(session: Session, run_id: int, key_id: int, width: int) -> bool:
    """Whether (run, key) keeps a rollup of `width`: it has a row (one index probe)."""
    where = (MetricRollup.run_id == run_id, MetricRollup.key_id == key_id, MetricRollup.width == width)
    return bool(session.scalar(select(exists().where(*where))))


def kept_widths_of(session: Session, run_id: int, key_ids: Sequence[int]) -> dict[int, tuple[int, ...]]:
    """The widths each of the run's keys keeps a rollup of (keys keeping none left out): one statement a
    width for a log's whole key set, an index probe a key."""
    kept_by_key: dict[int, tuple[int, ...]] = {}
    for width in WIDTHS:
        where = (
            MetricRollup.run_id == run_id,
            MetricRollup.key_id == MetricKey.id,
            MetricRollup.width == width,
        )
        for chunk in chunks(key_ids):
            for key_id in session.scalars(
                select(MetricKey.id).where(MetricKey.id.in_(chunk), exists().where(*where))
            ):
                kept_by_key[key_id] = (*kept_by_key.get(key_id, ()), width)
    return kept_by_key


def with_points(session: Session, run_id: int, key_ids: Sequence[int]) -> set[int]:
    """Those of the run's keys that have a point stored: one index probe a key, in one statement."""
    where = (MetricPoint.run_id == run_id, MetricPoint.key_id == MetricKey.id)
    found: set[int] = set()
    for chunk in chunks(key_ids):
        found.update(
            session.scalars(select(MetricKey.id).where(MetricKey.id.in_(chunk), exists().where(*where)))
        )
    return found


def paid_widths(count: int, first: int, last: int) -> tuple[int, ...]:
    """The widths `count` points logged from step `first` to `last` keep rollups of."""
    return tuple(w for w in WIDTHS if pays(count, first, last, w))


def stored_count(session: Session, run_id: int, key_id: int) -> int:
    """The points (run, key) has stored, counted up to DECIDE_POINTS + 1: as far as a decision needs."""
    some = select(MetricPoint.step).where(*_where(run_id, key_id)).limit(DECIDE_POINTS + 1).subquery()
    return session.scalar(select(func.count()).select_from(some)) or 0


def undecided(session: Session, run_id: int, key_id: int) -> bool:
    """Whether a key without rollups may still start them: at most DECIDE_POINTS points stored."""
    return stored_count(session, run_id, key_id) <= DECIDE_POINTS


def start(session: Session, run_id: int, key_id: int) -> tuple[int, ...]:
    """The rollups a key without any starts now, built from its stored points: the widths they pay for."""
    count = session.scalar(select(func.count()).where(*_where(run_id, key_id))) or 0
    first, last = index_ends(session, MetricPoint.step, *_where(run_id, key_id))
    if not count:
        return ()
    widths = paid_widths(count, first, last)
    for width in widths:
        rebuild(session, run_id, key_id, width, (first // width, last // width))
    return widths


def upsert_statement(dialect: str, mark: str) -> str:
    """INSERT of one bucket's sums that adds them to a stored bucket (points new to the store only)."""
    low, high = ("min", "max") if dialect == "sqlite" else ("least", "greatest")
    marks = ", ".join([mark] * 9)
    return (
        f"INSERT INTO metric_rollup ({COLUMNS}) VALUES ({marks}) "
        "ON CONFLICT (run_id, key_id, width, bucket) DO UPDATE SET "
        "n = metric_rollup.n + excluded.n, "
        "sum_step = metric_rollup.sum_step + excluded.sum_step, "
        "sum_value = metric_rollup.sum_value + excluded.sum_value, "
        f"min_value = {low}(metric_rollup.min_value, excluded.min_value), "
        f"max_value = {high}(metric_rollup.max_value, excluded.max_value)"
    )


def rebuild(session: Session, run_id: int, key_id: int, width: int, buckets: tuple[int, int]) -> None:
    """Recompute the buckets `buckets` (first, last) of a kept rollup from the stored points: after a write
    some of whose points the store already held (their sums must not count twice)."""
    first, last = buckets
    session.execute(
        delete(MetricRollup).where(
            MetricRollup.run_id == run_id,
            MetricRollup.key_id == key_id,
            MetricRollup.width == width,
            MetricRollup.bucket.between(first, last),
        )
    )
    session.execute(
        text(REBUILD.format(width=int(width))),
        {"run": run_id, "key": key_id, "first": first * width, "stop": (last + 1) * width},
    )


# The width is written into the statement (an int): PostgreSQL groups by an expression only when the
# select list repeats it, and two bound parameters are two expressions to it.
REBUILD = (
    f"INSERT INTO metric_rollup ({COLUMNS}) "
    "SELECT run_id, key_id, {width}, step / {width}, count(*), sum(step), sum(value), min(value), max(value) "
    "FROM metric_point WHERE run_id = :run AND key_id = :key AND step >= :first AND step < :stop "
    "GROUP BY run_id, key_id, step / {width}"
)


def drop(session: Session, pairs: Iterable[tuple[int, int]]) -> None:
    """Stop keeping the rollups of these (run, key) pairs (a negative step was stored for them)."""
    for run_id, key_id in pairs:
        session.execute(
            delete(MetricRollup).where(MetricRollup.run_id == run_id, MetricRollup.key_id == key_id)
        )


def bounds(steps: Sequence[int], width: int) -> list[tuple[int, int, int, int]]:
    """The buckets of `width` that ascending `steps` fall in: (bucket, start, stop, sum of its steps), the
    steps[start:stop] in it. Shared by every key logged at those steps."""
    out = []
    start, count = 0, len(steps)
    while start < count:
        bucket = steps[start] // width
        stop = bisect_left(steps, (bucket + 1) * width, start)
        out.append((bucket, start, stop, sum(steps[start:stop])))
        start = stop
    return out


def sums(
    run_id: int, key_id: int, width: int, buckets: list[tuple[int, int, int, int]], values: Sequence[float]
) -> list[tuple]:
    """The rollup rows of one key's `values`, logged at the steps `buckets` was cut from."""
    rows = []
    for bucket, start, stop, step_sum in buckets:
        part = values[start:stop]
        rows.append((run_id, key_id, width, bucket, stop - start, step_sum, sum(part), min(part), max(part)))
    return rows
