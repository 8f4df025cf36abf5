"""SpecForge training output, tracker exports and benchmark results, checked field by field."""

import gc
import io
from datetime import UTC, datetime

import pytest
from sqlalchemy import select, text

from specdash.db.engine import reading
from specdash.db.models import Checkpoint, Run
from specdash.ingest.formats import specforge_log
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnInvalid
from specdash.ingest.records import MetricRows
from specdash.ingest.sources import UploadSource
from tests.ingest_support import SPECFORGE, benchmarks, content, load, points


def checkpoints(engine) -> dict[str, tuple]:
    with reading(engine) as session:
        return {
            c.name: (c.run.name, c.epoch, c.step, c.path, [p.rate for p in c.position_acceptance])
            for c in session.scalars(select(Checkpoint))
        }


def test_console_log_metrics_checkpoints_and_run(engine):
    result = load(engine, SPECFORGE / "train_console.log")
    assert result.format == "specforge-log" and result.store.metric_points == 70
    got = points(engine, "llama-eagle3")  # the run is named by the args block's output_dir
    assert len(got) == 70  # 6 steps x 9 keys, 8 eval values, 8 epoch averages
    assert got[("train/acc_2", 150)] == 0.41 and got[("train/lr", 300)] == 5e-05
    assert got[("train/ploss_3", 50)] == 1.92
    assert got[("eval/acc_1", 200)] == 0.52 and got[("eval/ploss_3", 200)] == pytest.approx(1.64)
    assert got[("train/epoch_acc_0", 1)] == 0.69 and got[("train/epoch_ploss_3", 1)] == 1.62
    with reading(engine) as session:
        run = session.scalar(select(Run))
        assert (run.name, run.framework, run.speculative_algorithm, run.ttt_length, run.target_model) == (
            "llama-eagle3",
            "specforge",
            "EAGLE3",
            4,
            "Llama-3.1-8B-Instruct",
        )
    assert checkpoints(engine) == {
        # saved right after step 200: that step's accuracies
        "epoch_0_step_200": (
            "llama-eagle3",
            0,
            200,
            "/ckpt/llama-eagle3/epoch_0_step_200",
            [0.7, 0.54, 0.45, 0.39],
        ),
        # saved after the epoch averages: those, not step 300's values
        "epoch_0_step_300": (
            "llama-eagle3",
            0,
            300,
            "/ckpt/llama-eagle3/epoch_0_step_300",
            [0.69, 0.53, 0.44, 0.38],
        ),
    }


def test_run_option_names_the_run_of_a_log(engine):
    load(engine, SPECFORGE / "train_console.log", IngestPolicy(link=LinkOptions(run="renamed")))
    with reading(engine) as session:
        assert list(session.scalars(select(Run.name))) == ["renamed"]
    assert len(points(engine, "renamed")) == 70


def test_eagle_repo_epoch_lines(engine):
    load(engine, SPECFORGE / "train_eagle_repo.log", IngestPolicy(link=LinkOptions(run="eagle-llama")))
    got = points(engine, "eagle-llama")
    assert got[("train/epoch_acc_2", 2)] == 0.47 and got[("train/epoch_ploss_0", 1)] == 0.96
    assert got[("test/epoch_acc_1", 2)] == 0.53 and len(got) == 18
    with reading(engine) as session:
        run = session.scalar(select(Run))
        assert run.framework is None  # epoch lines alone do not say which trainer wrote them


def test_wandb_csv_export(engine):
    load(engine, SPECFORGE / "wandb_export.csv")
    got = points(engine, "llama-eagle3-b")  # run named by the column prefix
    assert got == {
        ("train/acc_0", 50): 0.51,
        ("train/ploss_0", 50): 1.4,
        ("train/acc_1", 50): 0.36,
        ("train/ploss_1", 50): 1.7,
        ("train/acc_0", 100): 0.6,
        ("train/ploss_0", 100): 1.2,
        ("train/acc_1", 100): 0.44,
        ("train/ploss_1", 100): 1.5,
        ("train/acc_1", 150): 0.49,
        ("train/ploss_1", 150): 1.4,
    }  # __MIN/__MAX columns and empty cells left out


def test_tracker_history_jsonl(engine):
    load(engine, SPECFORGE / "history.jsonl", IngestPolicy(link=LinkOptions(run="llama-eagle3-c")))
    got = points(engine, "llama-eagle3-c")
    assert got == {
        ("train/lr", 50): 1e-4,
        ("train/acc_0", 50): 0.55,
        ("train/acc_1", 50): 0.40,
        ("train/ploss_0", 50): pytest.approx(1.3),
        ("train/lr", 100): 1e-4,
        ("train/acc_0", 100): 0.63,
        ("train/acc_1", 100): 0.47,
        ("train/ploss_0", 100): pytest.approx(1.14),
    }


@pytest.mark.parametrize("metrics_first", [True, False])
def test_checkpoint_acceptance_is_derived_from_training_metrics(engine, metrics_first):
    checkpoint = b'{"kind": "checkpoint", "run": "llama-eagle3-b", "name": "epoch_0_step_120"}\n'
    if metrics_first:
        load(engine, SPECFORGE / "wandb_export.csv")
        result = ingest(engine, UploadSource("ckpt.jsonl", checkpoint))
    else:
        ingest(engine, UploadSource("ckpt.jsonl", checkpoint))
        result = load(engine, SPECFORGE / "wandb_export.csv")
    assert result.store.derived_acceptance == 1
    # the last step logged up to 120 is 100: acc_0 0.60, acc_1 0.44
    assert checkpoints(engine)["epoch_0_step_120"][4] == [0.6, 0.44]


def test_bench_eagle3_results(engine):
    load(engine, SPECFORGE / "train_console.log")
    result = load(
        engine,
        SPECFORGE / "bench_eagle3_results_20250821_120000.jsonl",
        IngestPolicy(link=LinkOptions(deployment="1x H100")),
    )
    assert [link.how for link in result.store.links] == ["baseline", "by path", "baseline", "by path"]
    mt_base, mt_spec, gsm_base, gsm_spec = benchmarks(engine)
    assert (mt_base.speculative_algorithm, mt_base.concurrency, mt_base.decode_tps) == (None, 1, 88.4)
    assert (mt_spec.speculative_algorithm, mt_spec.num_steps, mt_spec.topk, mt_spec.num_draft_tokens) == (
        "EAGLE3",
        3,
        1,
        4,
    )
    assert mt_spec.accept_length == 2.83 and mt_spec.dataset == "mtbench" and mt_spec.num_prompts == 80
    assert mt_spec.checkpoint.name == "epoch_0_step_300"
    assert gsm_spec.concurrency == 4 and gsm_spec.output_throughput == 726.4
    assert gsm_spec.decode_tps == pytest.approx(726.4 / 4)  # per request: aggregate over the batch of 4
    assert gsm_base.decode_tps == pytest.approx(350.1 / 4)


def test_specforge_benchmark_report(engine):
    load(
        engine,
        SPECFORGE / "benchmark_20250822_091502.json",
        IngestPolicy(link=LinkOptions(deployment="1x H100")),
    )
    base, spec = benchmarks(engine)
    assert base.speculative_algorithm is None and base.decode_tps == pytest.approx(348.5 / 4)
    assert (spec.speculative_algorithm, spec.num_steps, spec.topk, spec.num_draft_tokens) == (
        "EAGLE3",
        5,
        1,
        6,
    )
    assert (spec.concurrency, spec.dataset, spec.accept_length, spec.label) == (
        4,
        "humaneval",
        3.64,
        "eagle3-s5-k1-d6",
    )
    assert (
        spec.decode_tps == pytest.approx(729.3 / 4)
        and spec.drafter_path == "/ckpt/llama-eagle3/epoch_0_step_300"
    )
    assert spec.measured_at.replace(tzinfo=UTC) == datetime(2025, 8, 22, 9, 15, 2, tzinfo=UTC)


def test_metric_lines_are_data_never_code(engine, tmp_path):
    marker = tmp_path / "pwned"
    log = (
        "step 5: {'train/acc_0': 0.5, 'phase': 'warmup'}\n"  # a string among the numbers: kept out
        "step 6: {'train/loss': nan}\n"
        "step 7: {'train/loss': tensor(1.0)}\n"
        f"step 8: {{'x': __import__('os').system('touch {marker}')}}\n"
    )
    before = content(engine)
    result = ingest(engine, UploadSource("train.log", log.encode()), IngestPolicy(link=LinkOptions(run="r")))
    assert [str(p) for p in result.problems] == [
        "train.log:2: train/loss: must be a finite number, not nan",
        "train.log:3: metrics are not a dict of names to numbers",
        "train.log:4: metrics are not a dict of names to numbers",
    ]
    assert result.status == "failed" and content(engine) == before and not marker.exists()
    kept = ingest(
        engine,
        UploadSource("train.log", log.encode()),
        IngestPolicy(link=LinkOptions(run="r"), on_invalid=OnInvalid.SKIP),
    )
    assert kept.status == "loaded" and points(engine, "r") == {("train/acc_0", 5): 0.5}


def test_bulk_points_leave_foreign_keys_on(engine):
    lines = "".join(
        f"step {s}: {{'train/acc_0': 0.5, 'train/loss': {s / 1000}}}\n" for s in range(0, 4000, 2)
    )
    result = ingest(engine, UploadSource("bulk.log", lines.encode()))
    assert result.status == "loaded" and result.store.metric_points == 4000
    assert points(engine, "bulk")[("train/loss", 3998)] == 3.998
    with engine.connect() as connection:  # the pooled connection the ingest used
        assert connection.execute(text("PRAGMA foreign_keys")).scalar() == 1


# SpecForge's rebuilt trainer (2026): bare names and list values on its console
def test_the_bare_console_of_the_rebuilt_trainer(engine):
    result = load(engine, SPECFORGE / "train_console_2026.log")
    assert result.format == "specforge-log"
    got = points(engine, "train_console_2026")  # no args block: the run is the file's name
    # steps 10 and 20: 12 keys each; the eval line at step 20: avg_loss, avg_acc, a list of 3,
    # simulated_acc_len and 3 plosses, 9; step 30: the 12 and 4 acceptance rates, 16
    assert len(got) == 12 + 12 + 9 + 16
    assert got[("train/acc_0", 10)] == 0.6125 and got[("train/ploss_2", 10)] == 3.125
    assert got[("train/loss", 20)] == 5.75 and got[("train/lr", 30)] == 3e-05
    assert got[("train/grad_norm", 30)] == 1.0625
    assert got[("train/acceptance_rate_2", 30)] == 0.375
    assert got[("train/perf/optimizer_step_time_s", 20)] == 0.692
    # eval/per_position_acc: [0.6875, 0.53125, 0.40625] at step 20 -> eval/acc_0..2
    assert [got[(f"eval/acc_{i}", 20)] for i in range(3)] == [0.6875, 0.53125, 0.40625]
    assert got[("eval/simulated_acc_len", 20)] == 2.1484375


def test_logged_steps_leave_the_collector_nothing_to_walk():
    """A log's million points are held as tuples of floats, which the cyclic collector stops tracking,
    not as lists it would walk at every collection while the points wait for the store."""
    text = (
        "step 0: {'train/acc_0': 0.5, 'train/loss': 2.0}\nstep 50: {'train/acc_0': 0.6, 'train/loss': 1.9}\n"
    )
    items = list(specforge_log.parse(io.StringIO(text), "train.log"))
    steps = [step for item in items if isinstance(item.record, MetricRows) for step in item.record.steps]
    gc.collect()  # a collection untracks tuples of floats
    assert steps == [
        (0, ("train/acc_0", "train/loss"), (0.5, 2.0)),
        (50, ("train/acc_0", "train/loss"), (0.6, 1.9)),
    ]
    # the values: a step's tuple may stay tracked where its key names are shared with objects the
    # collector no longer examines (a command's imports, frozen by cli/main.py in the same process)
    assert not any(gc.is_tracked(values) for _, _, values in steps)
