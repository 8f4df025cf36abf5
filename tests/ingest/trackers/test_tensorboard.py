"""TensorBoard event files as SpecForge and speculators write them, read by the tracker reader. The files are
written in each test by tensorboardX's SummaryWriter (the trackers extra); the numbers are the test's own."""

import math

import pytest

from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem
from specdash.ingest.records import MetricRows
from specdash.ingest.trackers import reader_for
from specdash.ingest.trackers import tensorboard as tb
from specdash.ingest.trackers.batching import BATCH_STEPS
from tests.tracker_support import collect
from tests.tracker_support import write_events as write

tensorboardX = pytest.importorskip("tensorboardX")


def write_tensor_scalars(log_dir, steps: dict[int, dict[str, float]]):
    """Scalars as TensorBoard's own summary API writes them: a one-number float tensor per tag."""
    from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboardX.proto.tensor_pb2 import TensorProto
    from tensorboardX.writer import FileWriter

    writer = FileWriter(str(log_dir))
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="scalars"))
    for step, values in steps.items():
        for key, value in values.items():
            tensor = TensorProto(dtype=1, float_val=[value])  # DT_FLOAT
            writer.add_summary(
                Summary(value=[Summary.Value(tag=key, tensor=tensor, metadata=metadata)]), step
            )
    writer.close()


SPECFORGE_STEPS = {
    # what SpecForge's tracker boundary logs: train/ names, eval/per_position_acc expanded to /index
    10: {
        "train/acc_0": 0.625,
        "train/acc_1": 0.4375,
        "train/ploss_0": 2.25,
        "train/loss": 6.5,
        "train/lr": 1e-05,
    },
    20: {
        "train/acc_0": 0.6875,
        "train/acc_1": 0.5,
        "train/ploss_0": 1.875,
        "train/loss": 5.75,
        "train/lr": 2e-05,
    },
}
EVAL = {20: {"eval/per_position_acc/0": 0.75, "eval/per_position_acc/1": 0.5625, "eval/avg_loss": 5.5}}


def test_a_specforge_output_folder_with_runs_events(tmp_path):
    out = tmp_path / "outputs" / "qwen3-8b-eagle3-offline"
    write(out / "runs", SPECFORGE_STEPS)
    write(
        out / "runs", EVAL, filename_suffix=".1"
    )  # a second writer (an evaluation, a resume): a second event file
    assert len(tb.event_files(str(out))) == 2
    assert reader_for(str(out)) is tb.READER and reader_for(str(tmp_path / "nothing")) is None
    runs, got, problems = collect(tb.read(str(out)))
    assert not problems
    assert [r.name for r in runs] == ["qwen3-8b-eagle3-offline"]  # the folder above runs/
    run = "qwen3-8b-eagle3-offline"
    assert len(got) == 5 + 5 + 3
    assert got[(run, "train/acc_1", 20)] == 0.5 and got[(run, "train/lr", 10)] == pytest.approx(1e-05)
    assert got[(run, "eval/acc_0", 20)] == 0.75 and got[(run, "eval/acc_1", 20)] == 0.5625  # name/index
    assert got[(run, "eval/avg_loss", 20)] == 5.5


def test_a_single_event_file_and_tensor_style_scalars(tmp_path):
    # speculators: {log_dir}/{run_name}/events...; TensorBoard's newer scalar summaries are tensors
    write_tensor_scalars(tmp_path / "logs" / "run7", {5: {"train/loss_0": 2.5, "lr": 0.001}})
    (event_file,) = tb.event_files(str(tmp_path / "logs" / "run7"))
    runs, got, problems = collect(tb.read(str(event_file)))
    assert not problems and [r.name for r in runs] == ["run7"]
    assert got == {("run7", "train/loss_0", 5): 2.5, ("run7", "train/lr", 5): pytest.approx(0.001)}


def test_a_torn_last_record_is_where_a_growing_file_ends(tmp_path):
    write(tmp_path / "runs", SPECFORGE_STEPS)
    (event_file,) = tb.event_files(str(tmp_path / "runs"))
    data = event_file.read_bytes()
    event_file.write_bytes(data[:-7])  # the writer was cut off inside its last record (train/lr at 20)
    _runs, got, problems = collect(tb.read(str(event_file)))
    assert not problems
    assert len(got) == 9 and (tmp_path.name, "train/lr", 20) not in got


def test_a_file_that_is_no_event_file_is_refused(tmp_path):
    bogus = tmp_path / "events.out.tfevents.123.host"
    bogus.write_bytes(b"this is not a tfrecord stream at all")
    items = list(tb.read(str(bogus)))
    assert [p.message for p in items if isinstance(p, Problem)] == [
        "not a TensorBoard event record (bad length or checksum)"
    ]


def test_a_nan_loss_is_a_problem_at_its_tag(tmp_path):
    write(tmp_path / "runs", {30: {"train/loss": math.nan, "train/acc_0": 0.5}})
    _runs, got, problems = collect(tb.read(str(tmp_path)))
    assert [(p.field, p.message) for p in problems] == [
        ("train/loss", "must be a finite number, not nan (step 30)")
    ]
    assert got == {(tmp_path.name, "train/acc_0", 30): 0.5}


def test_long_histories_stream_in_batches(tmp_path):
    steps = {step: {"train/acc_0": 0.5, "train/loss": 1.0} for step in range(BATCH_STEPS * 2 + 10)}
    write(tmp_path / "runs", steps)
    batches = [
        i.record
        for i in tb.read(str(tmp_path))
        if isinstance(i, Located) and isinstance(i.record, MetricRows)
    ]
    # one entry per logged step, BATCH_STEPS steps a batch: 2000, 2000 and 10
    assert [len(b.steps) for b in batches] == [BATCH_STEPS, BATCH_STEPS, 10]
    assert batches[0].steps[0] == (0, ("train/acc_0", "train/loss"), [0.5, 1.0])
