"""`specdash ingest PATH` on what a trainer's tracker wrote, through the one pipeline (ingest/pipeline.py): a
folder or file of TensorBoard events, an MLflow store, a SpecForge config, a SpecForge output folder. The
stores are written in each test by the trackers' own writers (tensorboardX, MLflow's client) as SpecForge
calls them; the numbers are the test's own."""

import os
import tracemalloc

import pytest
from sqlalchemy import func, select

from specdash.db.engine import reading
from specdash.db.models import Checkpoint, IngestedFile, MetricPoint, Run
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.read import Spool, read_store, reader_format, store_digest
from specdash.ingest.records import MetricRows
from specdash.ingest.sources import PathSource
from specdash.ingest.trackers import reader_for
from specdash.ingest.trackers import tensorboard as tb
from specdash.ingest.trackers.batching import BATCH_STEPS
from tests.ingest_support import content, load, points
from tests.tracker_support import write_events

pytest.importorskip("tensorboardX")

RUN = "qwen3-8b-eagle3-offline"
# SpecForge's examples/configs/qwen3-8b-eagle3-offline.yaml, trimmed, with TTT 3 and a tracker
CONFIG = f"""model:
  target_model_path: Qwen/Qwen3-8B
  draft_model_config: configs/qwen3-8b-eagle3.json
  target_backend: sglang
training:
  strategy: eagle3
  num_epochs: 10
  ttt_length: 3
  save_interval: 100
  log_interval: 50
run_id: {RUN}
output_dir: ./outputs/{RUN}
tracking:
  report_to: tensorboard
"""
# what the trainer hands its tracker at each log step (tracking.training_metric_names: train/ added)
STEPS = {
    50: {"train/acc_0": 0.5, "train/acc_1": 0.375, "train/acc_2": 0.25, "train/loss": 4.5, "train/lr": 5e-05},
    100: {
        "train/acc_0": 0.75,
        "train/acc_1": 0.625,
        "train/acc_2": 0.5,
        "train/loss": 3.25,
        "train/lr": 1e-04,
    },
}


def checkpoint(out, step: int, complete: bool = True) -> None:
    folder = out / f"{RUN}-step{step}"
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\0" * 64)
    if complete:
        (folder / "training_state.pt").write_bytes(b"state")


def output_folder(tmp_path):
    """A SpecForge output folder after 100 steps with `--report-to tensorboard`."""
    out = tmp_path / "outputs" / RUN
    out.mkdir(parents=True)
    (out / f"{RUN}.yaml").write_text(CONFIG)
    write_events(out / "runs", STEPS)
    checkpoint(out, 50)
    checkpoint(out, 100)
    checkpoint(out, 150, complete=False)  # still being written: no training_state.pt yet
    os.symlink(out / f"{RUN}-step100", out / f"{RUN}-latest")
    return out


def test_an_output_folder_is_its_run_checkpoints_and_curves(engine, tmp_path):
    out = output_folder(tmp_path)
    assert reader_for(str(out)).name == "specforge-output"
    result = load(engine, out)
    assert result.format == "specforge-output"
    assert result.store.metric_points == 10  # 2 steps x 5 keys
    with reading(engine) as session:
        run = session.scalar(select(Run).where(Run.name == RUN))
        assert (run.framework, run.speculative_algorithm, run.ttt_length, run.target_model) == (
            "specforge",
            "EAGLE3",
            3,
            "Qwen3-8B",
        )
        checkpoints = session.scalars(select(Checkpoint).order_by(Checkpoint.step)).all()
        assert [(c.name, c.step) for c in checkpoints] == [(f"{RUN}-step50", 50), (f"{RUN}-step100", 100)]
        # each checkpoint's acceptance is train/acc_i at its step
        assert [p.rate for p in checkpoints[1].position_acceptance] == [0.75, 0.625, 0.5]
        assert [p.rate for p in checkpoints[0].position_acceptance] == [0.5, 0.375, 0.25]
    got = points(engine, RUN)
    assert got[("train/acc_1", 100)] == 0.625 and got[("train/lr", 50)] == pytest.approx(5e-05)


def test_reingesting_a_folder_changes_nothing_and_new_points_are_added(engine, tmp_path):
    out = output_folder(tmp_path)
    load(engine, out)
    before = content(engine)
    again = ingest(engine, PathSource(out))
    assert again.status == "skipped" and "already ingested" in again.message
    assert content(engine) == before
    # the event files alone hold the same points: stored already, nothing new
    alone = load(engine, out / "runs")
    assert alone.store.metric_points == 0 and content(engine)["metric_point"] == before["metric_point"]
    write_events(out / "runs", {150: {"train/acc_0": 0.8125}}, filename_suffix=".resumed")
    grown = load(engine, out)
    assert grown.store.metric_points == 1
    assert points(engine, RUN)[("train/acc_0", 150)] == 0.8125


def test_event_files_and_a_config_alone(engine, tmp_path):
    write_events(tmp_path / "a" / "runs", STEPS)
    (event_file,) = tb.event_files(str(tmp_path / "a"))
    assert load(engine, event_file).format == "tensorboard"
    assert points(engine, "a")[("train/loss", 100)] == 3.25  # the folder above runs/ names the run
    folder = load(engine, tmp_path / "a")  # the file's folder holds that same file: nothing new
    assert folder.format == "tensorboard" and folder.store.metric_points == 0
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    assert load(engine, config).format == "specforge-config"
    with reading(engine) as session:
        assert session.scalar(select(Run.ttt_length).where(Run.name == RUN)) == 3


def test_what_is_not_a_store_is_refused_whole(engine, tmp_path):
    (tmp_path / "empty").mkdir()
    result = ingest(engine, PathSource(tmp_path / "empty"))
    assert result.status == "failed"
    assert "no tracker store or SpecForge output" in result.problems[0].message
    write_events(tmp_path / "bad" / "runs", STEPS)
    (event_file,) = tb.event_files(str(tmp_path / "bad"))
    data = bytearray(event_file.read_bytes())
    second = 12 + int.from_bytes(data[:8], "little") + 4  # the second record's length, after the first
    data[second] ^= 0xFF  # its length no longer matches its checksum
    event_file.write_bytes(bytes(data))
    before = content(engine)
    damaged = ingest(engine, PathSource(event_file))
    assert damaged.status == "failed" and damaged.problems
    assert content(engine) == before
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG)
    forced = ingest(engine, PathSource(config), IngestPolicy(format_name="tensorboard"))
    assert forced.status == "failed" and "does not fit" in forced.problems[0].message


@pytest.mark.slow
def test_a_long_history_streams_in_bounded_memory(engine, tmp_path):
    """200,000 points (20,000 steps x 10 tags): read a batch of BATCH_STEPS steps at a time into the spool,
    whose memory does not grow with the history; all of them stored once."""
    from tensorboardX.proto.summary_pb2 import Summary
    from tensorboardX.writer import FileWriter

    writer = FileWriter(str(tmp_path / "long" / "runs"))
    tags = [f"train/acc_{i}" for i in range(7)] + ["train/loss", "train/lr", "train/grad_norm"]
    for step in range(20_000):
        values = [Summary.Value(tag=tag, simple_value=(step % 97) / 128) for tag in tags]
        writer.add_summary(Summary(value=values), step)
    writer.close()
    path = str(tmp_path / "long")
    reader = reader_for(path)
    sizes: list[int] = []
    spool = Spool()

    def sink(item):
        if isinstance(item.record, MetricRows):
            sizes.append(len(item.record.steps))
        spool.add(item)

    tracemalloc.start()
    problems: list = []
    read_store(reader, path, None, problems, sink)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    spool.close()
    assert not problems and sum(sizes) == 20_000 and max(sizes) == BATCH_STEPS
    # the whole history as Python objects is ~20 MB; the reader and the spool hold a few batches of it
    assert peak < 8 * 1024 * 1024, peak
    result = load(engine, tmp_path / "long")
    assert result.store.metric_points == 200_000
    with reading(engine) as session:
        assert session.scalar(select(func.count()).select_from(MetricPoint)) == 200_000
        assert session.scalar(select(func.count()).select_from(IngestedFile)) == 1
    assert ingest(engine, PathSource(tmp_path / "long")).status == "skipped"


def test_a_store_digest_is_its_content_not_its_place(tmp_path):
    out = output_folder(tmp_path / "one")
    copy = tmp_path / "two" / "outputs" / RUN
    copy.parent.mkdir(parents=True)
    os.system(f"cp -a {out} {copy}")
    reader = reader_for(str(out))
    assert store_digest(reader, str(out))[0] == store_digest(reader, str(copy))[0]
    (copy / f"{RUN}-step150" / "training_state.pt").write_bytes(b"state")  # a checkpoint completed
    assert store_digest(reader, str(out))[0] != store_digest(reader, str(copy))[0]
    assert reader_format(reader).bulk_points


def test_specdash_ingest_takes_a_folder(invoke, db_url, tmp_path):
    out = output_folder(tmp_path)
    assert invoke(db_url, "init").exit_code == 0
    result = invoke(db_url, "ingest", str(out))
    assert result.exit_code == 0, result.output
    assert "as specforge-output; created 2 checkpoint(s), 1 run(s); 10 metric point(s)" in result.output
    again = invoke(db_url, "ingest", str(out))
    assert "skipped, already ingested" in again.output
    assert "specforge-output" in invoke(db_url, "formats").output
