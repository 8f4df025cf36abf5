"""Grouping a stream of (step, name, value) points into MetricRows batches, as the log parsers hand them
over: one (step, keys, values) entry per logged step, BATCH_STEPS steps at a time (bounded memory)."""

import math
from collections.abc import Iterable, Iterator

from specdash.db.records import MAX_INT
from specdash.ingest.formats.base import Located
from specdash.ingest.formats.metric_names import aliases, stored_name
from specdash.ingest.metric_points import MAX_KEY_CHARS
from specdash.ingest.problems import Problem
from specdash.ingest.records import MetricRows

BATCH_STEPS = 2000


def metric_batches(
    path: str, run: str, points: Iterable[tuple[int, str, float]], line: int | None = None
) -> Iterator["Located | Problem"]:
    """MetricRows of `run` from points in step order (points of one step together, as trackers write
    them); names go through `stored_name`. A non-finite value, a negative step or an overlong name is a
    problem at its tracker name."""
    batch: list[tuple[int, tuple[str, ...], list[float]]] = []
    current = -1  # no step yet (steps are >= 0)
    values: dict[str, float] = {}
    for step, name, value in points:
        if not 0 <= step <= MAX_INT:
            yield Problem(path, line, name, f"step {step} is outside 0..{MAX_INT}")
            continue
        if not math.isfinite(value):
            yield Problem(path, line, name, f"must be a finite number, not {value} (step {step})")
            continue
        key = stored_name(name)
        if len(key) > MAX_KEY_CHARS:
            yield Problem(path, line, name[:40] + "...", f"key longer than {MAX_KEY_CHARS}")
            continue
        if step != current and values:
            batch.append((current, tuple(values), list(values.values())))
            values = {}
            if len(batch) >= BATCH_STEPS:
                yield Located(line, MetricRows(run, batch))
                batch = []
        current = step
        values[key] = value
        for alias in aliases(key):
            values.setdefault(alias, value)
    if values:
        batch.append((current, tuple(values), list(values.values())))
    if batch:
        yield Located(line, MetricRows(run, batch))
