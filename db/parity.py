"""The parity plot's data: each benchmark's prediction from one source against its measurement, bounded
for a browser (the largest gaps and an even sample by benchmark id) whatever the store holds."""

import math
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy import Integer, Select, bindparam, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import GapStatus, PredictionSource
from specdash.db import parity_counts
from specdash.db.bulk import index_ends_select
from specdash.db.gap_joins import NAMES, with_gap_joins
from specdash.db.models import BENCHMARK_SETTING, SOURCE_KEY, Alert, Benchmark, Gap, Prediction
from specdash.db.rows import driver_rows, rows_of


class ParityPoint(NamedTuple):
    """One benchmark on the parity plot: its measured against one source's predicted tok/s, the gap
    (1 - measured / predicted), and the status and severity of its alert."""

    benchmark_id: int
    gap_id: int
    run: str | None
    checkpoint: str | None
    deployment: str
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    measured_tps: float
    predicted_tps: float
    gap: float
    status: str
    severity: str | None


def _parity_select(by) -> Select:
    """The parity plot's columns of gaps of the source `by` names: the condition on the prediction source
    (the plain column's, or the expression the source's predictions are indexed on, to drive the query
    from them)."""
    return with_gap_joins(
        select(
            Benchmark.id.label("benchmark_id"),
            Gap.id.label("gap_id"),
            *NAMES,
            *BENCHMARK_SETTING,
            Gap.measured_tps,
            Gap.predicted_tps,
            Gap.gap,
            func.coalesce(Alert.status, GapStatus.OPEN).label("status"),
            Gap.severity,
        )
    ).where(by, Benchmark.superseded_by_id.is_(None))


# The plot's statements, built once with the source, sizes and stride bound at each run: built per call
# (and their cache keys with them) they cost the Overview more than the SQLite work of the small ones.
_OF_SOURCE = _parity_select(Prediction.source == bindparam("source"))
_EVERY_POINT = (
    _parity_select(SOURCE_KEY == bindparam("source"))
    .order_by(Benchmark.id)
    .limit(bindparam("max_points", type_=Integer))
)
_EVERY_ROW = _OF_SOURCE.order_by(Benchmark.id)
# the largest |gap|s are among the largest and the smallest gaps: two walks of the gap index (ordering by
# abs() would sort every row)
_LARGEST_GAPS = _OF_SOURCE.order_by(Gap.gap.desc()).limit(bindparam("worst_n", type_=Integer))
_SMALLEST_GAPS = _OF_SOURCE.order_by(Gap.gap.asc()).limit(bindparam("worst_n", type_=Integer))
_GAP_AT = list(_OF_SOURCE.selected_columns.keys()).index("gap")
_GAPS_BENCHMARK_ENDS = index_ends_select(Gap.benchmark_id)


def _sampled_select() -> Select:
    """The plot's rows at benchmark ids `first`, `first + stride`, ... up to `last` (bound at each run),
    generated in SQL (a recursive CTE): each is then looked up through the gap's (benchmark, prediction)
    index, instead of testing every gap's id against the stride."""
    ids = select(bindparam("first", type_=Integer).label("id")).cte("sampled_ids", recursive=True)
    stride = bindparam("stride", type_=Integer)
    ids = ids.union_all(
        select(ids.c.id + stride).where(ids.c.id + stride <= bindparam("last", type_=Integer))
    )
    return _OF_SOURCE.join(ids, ids.c.id == Gap.benchmark_id).order_by(Benchmark.id)


_SAMPLED = _sampled_select()


def parity_total(session: Session, source: str = PredictionSource.THEORY) -> int:
    """How many benchmarks have a prediction from `source` (superseded ones left out), counted over every
    gap of the store: the count db/parity_counts.py keeps, which the plot reads instead."""
    query = (
        select(func.count())
        .select_from(Gap)
        .join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .where(Prediction.source == source, Benchmark.superseded_by_id.is_(None))
    )
    return session.scalar(query) or 0


@dataclass(frozen=True)
class ParityPoints:
    """The parity plot's rows and how many benchmarks they stand for, counted whatever the store holds
    (db/parity_counts.py keeps the count): all of them are drawn when they fit, else a bounded sample."""

    rows: list[ParityPoint]
    total: int


def parity_points(session: Session, source: str, max_points: int) -> ParityPoints:
    """At most `max_points` rows of parity_rows: every benchmark when they fit, else the largest gaps (a
    quarter of the points: a browser never receives tens of thousands) and an even sample by benchmark id
    of the rest; with the source's count of benchmarks, kept by the writes (one row read)."""
    total = parity_counts.counted(session, source)
    if total <= max_points:
        # few enough to draw: found from the source's predictions, not by scanning every gap (bounded all
        # the same: a browser never gets more than max_points, whatever the count says)
        parameters = {"source": source, "max_points": max_points}
        return ParityPoints(rows_of(session, _EVERY_POINT, ParityPoint, parameters), total)
    return ParityPoints(_thinned(session, source, max_points), total)


def parity_rows(session: Session, source: str = PredictionSource.THEORY) -> list[ParityPoint]:
    """One row per benchmark with its prediction from `source`, by benchmark id: the parity plot's data
    unthinned (parity_points bounds it for a browser)."""
    return rows_of(session, _EVERY_ROW, ParityPoint, {"source": source})


def _thinned(session: Session, source: str, max_points: int) -> list[ParityPoint]:
    """The largest gaps (a quarter of `max_points`) and an even sample by benchmark id."""
    worst_n = max_points // 4
    extremes = [
        *driver_rows(session, _LARGEST_GAPS, {"source": source, "worst_n": worst_n}),
        *driver_rows(session, _SMALLEST_GAPS, {"source": source, "worst_n": worst_n}),
    ]
    worst = sorted(extremes, key=lambda row: (-abs(row[_GAP_AT]), row[0]))[:worst_n]
    sample = driver_rows(session, _SAMPLED, {"source": source, **_stride(session, max_points - worst_n)})
    # a benchmark both among the worst and sampled is drawn once
    by_id = {row[0]: row for row in reversed([*worst, *sample])}
    return [ParityPoint._make(by_id[benchmark_id]) for benchmark_id in sorted(by_id)]


def _stride(session: Session, at_most: int) -> dict[str, int]:
    """The sample's first and last benchmark id (the ends of those with gaps) and a stride between them
    that picks at most `at_most`."""
    first, last = session.connection().execute(_GAPS_BENCHMARK_ENDS).one()
    stride = max(1, math.ceil((last - first + 1) / at_most)) if first is not None else 1
    return {"first": first or 0, "stride": stride, "last": last or 0}
