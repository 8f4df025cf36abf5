"""The same work through MLflow's tracking client on a SQLite store, for the ratios."""

import random
import time
from pathlib import Path

from bench.data import LOG_EVERY, SEED, metric_values


def _client(path: Path):
    import logging

    logging.getLogger("mlflow").setLevel(logging.WARNING)
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{path}")


def ingest_points(path: Path, steps: int) -> float:
    """log_batch of the training points, 1,000 a call (MLflow's limit); seconds, store set-up excluded."""
    from mlflow.entities import Metric

    client = _client(path)
    run_id = client.create_run(client.create_experiment("ingest")).info.run_id
    rng = random.Random(SEED)
    start = time.perf_counter()
    batch = []
    for n in range(steps):
        step = n * LOG_EVERY
        for key, value in metric_values(step, rng).items():
            batch.append(Metric(key, value, 0, step))
            if len(batch) == 1000:
                client.log_batch(run_id, metrics=batch)
                batch = []
    if batch:
        client.log_batch(run_id, metrics=batch)
    return time.perf_counter() - start


def populate_runs(path: Path, frame) -> str:
    """One MLflow run per checkpoint, with its benchmarks' measured and predicted tok/s as metrics."""
    from mlflow.entities import Metric, Param

    client = _client(path)
    experiment = client.create_experiment("checkpoints")
    for (run, checkpoint), group in frame.groupby(["run", "checkpoint"], sort=False):
        mlrun = client.create_run(experiment, run_name=f"{run}/{checkpoint}")
        metrics, params = [], [Param("run", run), Param("checkpoint", checkpoint)]
        for row in group.itertuples():
            tag = f"{row.deployment_id}_{row.num_steps}_{row.topk}_{row.num_draft_tokens}_{row.concurrency}"
            metrics.append(Metric(f"measured_tps_{tag}", float(row.measured_tps), 0, 0))
            metrics.append(Metric(f"predicted_tps_{tag}", float(row.predicted_tps), 0, 0))
        client.log_batch(mlrun.info.run_id, metrics=metrics[:1000], params=params)
    return experiment


def query_runs(path: Path, experiment: str) -> float:
    """Page through every run with its metrics, as a comparison view must; seconds."""
    client = _client(path)
    client.search_runs(
        [experiment], max_results=1
    )  # warm-up: the store's engine and schema check, as for specdash
    start = time.perf_counter()
    token, runs = None, 0
    while True:
        page = client.search_runs([experiment], max_results=1000, page_token=token)
        runs += len(page)
        token = page.token
        if not token:
            break
    elapsed = time.perf_counter() - start
    assert runs > 0
    return elapsed
