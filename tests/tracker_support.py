"""Helpers the tracker readers' tests share: what a reader yields, sorted into runs, metric points and problems."""

from specdash.ingest.problems import Problem
from specdash.ingest.records import MetricRows, RunRecord


def collect(items) -> tuple[list[RunRecord], dict[tuple[str, str, int], float], list[Problem]]:
    """(runs, {(run, key, step): value}, problems) of a reader's output."""
    runs, got, problems = [], {}, []
    for item in items:
        if isinstance(item, Problem):
            problems.append(item)
        elif isinstance(item.record, MetricRows):
            for step, keys, values in item.record.steps:
                for key, value in zip(keys, values, strict=True):
                    got[(item.record.run, key, step)] = value
        else:
            runs.append(item.record)
    return runs, got, problems
