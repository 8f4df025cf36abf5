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


# --- a SpecForge output folder, as the current trainer leaves it (specforge/training/assembly.py,
# tracker.py, checkpoint.py): the config kept beside what the trainer wrote into output_dir ---------------
SPECFORGE_RUN = "qwen3-8b-eagle3-offline-ttt3"
# the tracking options SpecForge's MLflowTracker logs as params (_public_config of TrackingConfig's fields)
TRACKING_PARAMS = {
    "report_to": "mlflow",
    "wandb_project": "specforge",
    "wandb_name": SPECFORGE_RUN,
    "wandb_key": "None",
    "wandb_offline": "False",
    "wandb_dir": "None",
    "swanlab_project": "specforge",
    "swanlab_name": SPECFORGE_RUN,
    "swanlab_key": "None",
    "mlflow_tracking_uri": f"sqlite:///outputs/{SPECFORGE_RUN}/mlflow.db",
    "mlflow_experiment_name": "specforge",
    "mlflow_run_name": SPECFORGE_RUN,
}


def specforge_config(report_to: str) -> str:
    """SpecForge's examples/configs/qwen3-8b-eagle3-offline.yaml, trimmed, at TTT 3, with a tracker."""
    uri = (
        f"\n  mlflow_tracking_uri: sqlite:///outputs/{SPECFORGE_RUN}/mlflow.db"
        if report_to == "mlflow"
        else ""
    )
    return f"""model:
  target_model_path: Qwen/Qwen3-8B
  draft_model_config: configs/qwen3-8b-eagle3.json
  target_backend: sglang
  torch_dtype: bfloat16

data:
  hidden_states_path: ./cache/hidden_states/qwen3-8b-sharegpt
  max_length: 4096
  chat_template: qwen

training:
  strategy: eagle3
  num_epochs: 1
  batch_size: 1
  learning_rate: 1.0e-4
  ttt_length: 3
  save_interval: 250
  log_interval: 50

run_id: {SPECFORGE_RUN}
output_dir: ./outputs/{SPECFORGE_RUN}

tracking:
  report_to: {report_to}{uri}
"""


def specforge_steps() -> dict[int, dict[str, float]]:
    """What the trainer hands its tracker every 50 steps up to 500 (train/ added at the tracker boundary):
    acc_0 = 0.5 + k/64 at step 50k, each later position 0.125 below; numbers float32 holds exactly."""
    steps = {}
    for k in range(1, 11):
        acc = 0.5 + k / 64
        steps[50 * k] = {
            **{f"train/acc_{i}": acc - 0.125 * i for i in range(3)},
            **{f"train/ploss_{i}": 2.0 - k / 16 + i / 4 for i in range(3)},
            "train/loss": 6.0 - k / 8,
            "train/grad_norm": 1.0 + k / 32,
            "train/lr": k / 1024,
            "train/perf/optimizer_step_time_s": 0.5,
        }
    return steps


def specforge_output(root, report_to: str, links: bool = True):
    """`{root}/{run_id}/`: the config, the tracker's store (runs/ event files, or mlflow.db), and the
    checkpoints of steps 250 and 500 (`{run_id}-step{N}/` with training_state.pt; `-latest` links the last)."""
    out = root / SPECFORGE_RUN
    out.mkdir(parents=True)
    (out / f"{SPECFORGE_RUN}.yaml").write_text(specforge_config(report_to))
    if report_to == "tensorboard":
        write_events(out / "runs", specforge_steps())
    else:
        fill_mlflow(f"sqlite:///{out / 'mlflow.db'}", SPECFORGE_RUN, specforge_steps(), TRACKING_PARAMS)
    for step in (250, 500):
        checkpoint = out / f"{SPECFORGE_RUN}-step{step}"
        checkpoint.mkdir()
        (checkpoint / "config.json").write_text('{"architectures": ["LlamaForCausalLMEagle3"]}\n')
        (checkpoint / "training_state.pt").write_bytes(b"state of step %d\n" % step)
    if links:
        (out / f"{SPECFORGE_RUN}-latest").symlink_to(f"{SPECFORGE_RUN}-step500")
    return out


if (
    __name__ == "__main__"
):  # the docs' fixture: python -m tests.tracker_support tests/fixtures/specforge/output
    import sys
    from pathlib import Path

    specforge_output(Path(sys.argv[1]), "tensorboard")
