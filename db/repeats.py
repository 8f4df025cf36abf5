"""Repeat groups: the measurements of one setting at one load, dataset and context (mean input and output
tokens per request), on one deployment and engine and of one checkpoint (none for a baseline), that one
file holds (a user's repeats; a rerun in a later file is a rerun, judged on its own, maybe superseding),
and the measurement noise their spread shows."""

from collections import defaultdict
from collections.abc import Collection, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel.context import OUTPUT_CLASS_TOKENS
from specdash.costmodel.uncertainty import repeat_noise
from specdash.db.models import Benchmark

# The columns that make two benchmarks repeats of one measurement.
REPEAT_COLUMNS = (
    "deployment_id",
    "ingested_file_id",
    "checkpoint_id",
    "engine",
    "concurrency",
    "dataset",
    "speculative_algorithm",
    "num_steps",
    "topk",
    "num_draft_tokens",
)


def repeat_columns() -> list:
    """The columns, and the lengths as costmodel.context.length_class compares them: the prompt to the
    token, the output in classes of OUTPUT_CLASS_TOKENS (two runs sample their outputs anew)."""
    return [
        *(getattr(Benchmark, name) for name in REPEAT_COLUMNS),
        func.round(Benchmark.input_tokens),
        func.round(Benchmark.output_tokens / OUTPUT_CLASS_TOKENS),
    ]


def noise_by_deployment(session: Session, deployment_ids: Sequence[int] | None = None) -> dict[int, float]:
    """Each deployment's (of those given) measurement noise from its repeat groups without speculation
    (costmodel.uncertainty.repeat_noise); deployments without such a repeat are left out. Only runs without
    speculation measure the machine alone: two speculative runs also differ by what the drafter accepted
    (the acceptance part of a band), and a rerun with something wrong is an anomaly, not noise."""
    groups: dict[tuple, list[float]] = defaultdict(list)
    query = select(*repeat_columns(), Benchmark.decode_tps).where(
        Benchmark.superseded_by_id.is_(None), Benchmark.speculative_algorithm.is_(None)
    )
    if deployment_ids is not None:
        query = query.where(Benchmark.deployment_id.in_(list(deployment_ids)))
    for row in session.execute(query):
        groups[tuple(row[:-1])].append(row[-1])
    by_deployment: dict[int, list[list[float]]] = defaultdict(list)
    for key, speeds in groups.items():
        if len(speeds) > 1:
            by_deployment[key[0]].append(speeds)
    noise = {deployment: repeat_noise(repeats) for deployment, repeats in by_deployment.items()}
    return {deployment: value for deployment, value in noise.items() if value is not None}


def repeated_baselines(
    session: Session, benchmark_ids: Collection[int], deployment_ids: Collection[int]
) -> set[int]:
    """The deployments where one of these benchmarks without speculation (on `deployment_ids`) has a
    repeat: its deployment's noise (noise_by_deployment) counts it, and with it the band of every
    prediction there. One read of those deployments' baselines, the given ones found among them by id (a
    big file's baselines are every one on their deployments: reading them first by id read them twice)."""
    if not benchmark_ids:
        return set()
    given = set(benchmark_ids)
    query = select(*repeat_columns(), Benchmark.id).where(
        Benchmark.speculative_algorithm.is_(None),
        Benchmark.superseded_by_id.is_(None),
        Benchmark.deployment_id.in_(sorted(set(deployment_ids))),
    )
    counts: dict[tuple, int] = defaultdict(int)
    keys = set()
    # through the Core connection: column tuples, without the ORM's result machinery
    for row in session.connection().execute(query):
        key = tuple(row)[:-1]
        counts[key] += 1
        if row[-1] in given:
            keys.add(key)
    return {key[0] for key in keys if counts[key] > 1}
