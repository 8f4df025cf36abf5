"""Training curves for the Checkpoints page: each run's logged metrics, at most CURVE_POINTS per line.

A long series is cut into buckets of equal steps, each giving the mean step, the mean value and the
range (min, max). A key that keeps a rollup (db/rollups.py) at most half a bucket wide is read from it,
each chart bucket summing the rollup rows that start in it (3.5 million points in one chart cost 1.1 s
to read from the points, 0.07 s from their rollup rows). Any other key is
read from its points, each bucket one range read of the primary key (run, key, step): a GROUP BY over the
bucket expression made SQLite sort every point first (3 s for those 3.5 million points)."""

import math
from typing import NamedTuple

from sqlalchemy import Integer, bindparam, func, literal_column, select
from sqlalchemy.orm import Session

from specdash.db import rollups
from specdash.db.bulk import index_ends
from specdash.db.models import MetricKey, MetricPoint, MetricRollup, Run

# Most points per (run, metric) line that reach the browser; longer series are bucketed by step.
CURVE_POINTS = 400


class CurvePoint(NamedTuple):
    """One point of a run's metric line: a bucket of `bucket_steps` steps with its mean step, mean value and
    range (one logged point when bucket_steps is 1: min = max = value)."""

    run: str
    key: str
    step: float
    value: float
    min: float
    max: float
    bucket_steps: int


def training_curves(
    session: Session, run_ids: list[int], keys: list[str], max_points: int = CURVE_POINTS
) -> list[CurvePoint]:
    """Training metrics of the runs, at most `max_points` per (run, key), by run name, key and step:
    every point of a short run (min = max = value), else bucketed by step."""
    if not run_ids or not keys:
        return []
    key_ids = dict(
        session.execute(
            select(MetricKey.name, MetricKey.id).where(MetricKey.name.in_(keys)).order_by(MetricKey.name)
        ).all()
    )
    points: list[CurvePoint] = []
    for run_id, run_name in session.execute(
        select(Run.id, Run.name).where(Run.id.in_(run_ids)).order_by(Run.name)
    ):
        spans = {name: span for name, key_id in key_ids.items() if (span := _span(session, run_id, key_id))}
        if not spans:
            continue
        lowest = min(first for first, _ in spans.values())
        highest = max(last for _, last in spans.values())
        grid = (lowest, highest, max(1, math.ceil((highest - lowest + 1) / max_points)))
        points += [
            CurvePoint(run_name, name, step, value, low, high, grid[2])
            for name in spans
            for step, value, low, high in _key_buckets(session, run_id, key_ids[name], grid)
        ]
    return points


def _key_buckets(session: Session, run_id: int, key_id: int, grid: tuple[int, int, int]) -> list[tuple]:
    """One key's buckets on the run's grid (first step, last step, steps per bucket): from its widest
    kept rollup at most half a bucket wide, else from its points."""
    bucket_steps = grid[2]
    usable = [w for w in rollups.WIDTHS if 2 * w <= bucket_steps and rollups.kept(session, run_id, key_id, w)]
    if not usable:
        return _buckets(session, run_id, key_id, *grid)
    return _rollup_buckets(session, run_id, key_id, max(usable), grid)


def _rollup_buckets(
    session: Session, run_id: int, key_id: int, width: int, grid: tuple[int, int, int]
) -> list[tuple]:
    """(mean step, mean, min, max) per non-empty bucket, summed from the rollup of `width`: each rollup
    bucket goes to the chart bucket its first step falls in (the first, starting before `lowest`, to the
    first), so a chart bucket is a whole number of rollup buckets, at most one more or less than its
    neighbours; its mean step is that of the points it holds."""
    lowest, highest, bucket_steps = grid
    # whole numbers written into the statement: PostgreSQL takes an expression the select list groups by
    # for the same one only when it is spelt the same, bound parameters included; SQL's division
    # truncates, so the rollup bucket starting before `lowest` (by less than a chart bucket) joins the first
    chart_bucket = (
        MetricRollup.bucket * literal_column(str(int(width)), Integer)
        - literal_column(str(int(lowest)), Integer)
    ) // literal_column(str(int(bucket_steps)), Integer)
    query = (
        select(
            func.sum(MetricRollup.n),
            func.sum(MetricRollup.sum_step),
            func.sum(MetricRollup.sum_value),
            func.min(MetricRollup.min_value),
            func.max(MetricRollup.max_value),
        )
        .where(
            MetricRollup.run_id == run_id,
            MetricRollup.key_id == key_id,
            MetricRollup.width == width,
            MetricRollup.bucket.between(lowest // width, highest // width),
        )
        .group_by(chart_bucket)
        .order_by(chart_bucket)
    )
    return [
        (float(step_sum) / n, float(value_sum) / n, low, high)
        for n, step_sum, value_sum, low, high in session.connection().execute(query)
    ]


def _span(session: Session, run_id: int, key_id: int) -> tuple[int, int] | None:
    """The first and last step logged for one key (None: nothing logged): the ends of the primary key's
    range (not min and max over an IN list of keys, a scan)."""
    first, last = index_ends(
        session, MetricPoint.step, MetricPoint.run_id == run_id, MetricPoint.key_id == key_id
    )
    return None if first is None else (int(first), int(last))


def _buckets(
    session: Session, run_id: int, key_id: int, lowest: int, highest: int, bucket_steps: int
) -> list[tuple]:
    """(mean step, mean, min, max) of each non-empty bucket of `bucket_steps` steps from `lowest`."""
    where = (MetricPoint.run_id == run_id, MetricPoint.key_id == key_id)
    connection = session.connection()
    if bucket_steps == 1:
        points = select(MetricPoint.step, MetricPoint.value, MetricPoint.value, MetricPoint.value)
        return [tuple(row) for row in connection.execute(points.where(*where).order_by(MetricPoint.step))]
    start, end = bindparam("start", type_=Integer), bindparam("end", type_=Integer)
    bucket = select(
        func.avg(MetricPoint.step),
        func.avg(MetricPoint.value),
        func.min(MetricPoint.value),
        func.max(MetricPoint.value),
    ).where(*where, MetricPoint.step >= start, MetricPoint.step < end)
    out = []
    for low in range(lowest, highest + 1, bucket_steps):
        row = connection.execute(bucket, {"start": low, "end": low + bucket_steps}).one()
        if row[0] is not None:
            out.append(tuple(row))
    return out
