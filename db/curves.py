"""Training curves for the Checkpoints page: each run's logged metrics, at most CURVE_POINTS per line.

A long series is cut into buckets of equal steps, each giving the mean step, the mean value and the
range (min, max). Each bucket is one range read of the metric point's primary key (run, key, step): a
GROUP BY over the bucket expression made SQLite sort every point first (10 million points logged, 3.5
million of them in one chart, cost 3 s; the range reads cost a third of that)."""

import math

import pandas as pd
from sqlalchemy import Integer, bindparam, func, select
from sqlalchemy.orm import Session

from specdash.db.bulk import index_ends
from specdash.db.models import MetricKey, MetricPoint, Run

# Most points per (run, metric) line that reach the browser; longer series are bucketed by step.
CURVE_POINTS = 400
COLUMNS = ["run", "key", "step", "value", "min", "max", "bucket_steps"]


def training_curves(
    session: Session, run_ids: list[int], keys: list[str], max_points: int = CURVE_POINTS
) -> pd.DataFrame:
    """Training metrics of the runs, at most `max_points` per (run, key), by run name, key and step:
    every point of a short run (min = max = value), else bucketed by step."""
    if not run_ids or not keys:
        return pd.DataFrame(columns=COLUMNS)
    key_ids = dict(
        session.execute(
            select(MetricKey.name, MetricKey.id).where(MetricKey.name.in_(keys)).order_by(MetricKey.name)
        ).all()
    )
    frames = []
    for run_id, run_name in session.execute(
        select(Run.id, Run.name).where(Run.id.in_(run_ids)).order_by(Run.name)
    ):
        spans = {name: span for name, key_id in key_ids.items() if (span := _span(session, run_id, key_id))}
        if not spans:
            continue
        lowest = min(first for first, _ in spans.values())
        highest = max(last for _, last in spans.values())
        bucket_steps = max(1, math.ceil((highest - lowest + 1) / max_points))
        rows = [
            (name, *row)
            for name in spans
            for row in _buckets(session, run_id, key_ids[name], lowest, highest, bucket_steps)
        ]
        frame = pd.DataFrame.from_records(rows, columns=["key", "step", "value", "min", "max"])
        frames.append(frame.assign(run=run_name, bucket_steps=bucket_steps))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]


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
