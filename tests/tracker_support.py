"""Helpers the tracker readers' tests share: what a reader yields, sorted into runs, metric points and
problems; and the trackers' own writers as SpecForge calls them (tensorboardX's SummaryWriter, MLflow's
client), which need the trackers extra."""

import time

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


def write_events(log_dir, steps: dict[int, dict[str, float]], **options) -> None:
    """Event files as SpecForge's TensorboardTracker.log writes them: one add_scalar per key and step."""
    import tensorboardX

    writer = tensorboardX.SummaryWriter(log_dir=str(log_dir), **options)
    for step, values in steps.items():
        for key, value in values.items():
            writer.add_scalar(key, value, global_step=step)
    writer.close()


def fill_mlflow(uri: str, run_name: str, history: dict, params: dict, finish: bool = True) -> str:
    """A run in the MLflow store at `uri`, as SpecForge's MLflowTracker makes one: experiment `specforge`,
    its params, then log_metrics(values, step=step) a step at a time. Returns the run's id."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("specforge")
    experiment_id = experiment.experiment_id if experiment else client.create_experiment("specforge")
    run = client.create_run(experiment_id, run_name=run_name)
    now = int(time.time() * 1000)
    client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in params.items()])
    for step, values in history.items():
        metrics = [Metric(k, v, now + step, step) for k, v in values.items()]
        client.log_batch(run.info.run_id, metrics=metrics)
    if finish:
        client.set_terminated(run.info.run_id)
    return run.info.run_id
