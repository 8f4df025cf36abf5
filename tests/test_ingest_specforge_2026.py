"""SpecForge's rebuilt trainer: its bare console, its config files and its checkpoint folders. Every expected
number is read off the fixture (tests/fixtures/specforge/README.md says where each shape comes from)."""

import shutil

import pytest

from specdash.ingest.formats import specforge_config
from specdash.ingest.formats.metric_names import flatten, stored_name
from specdash.ingest.problems import Problem
from specdash.ingest.records import CheckpointRecord, RunRecord
from specdash.ingest.trackers import reader_for
from tests.ingest_support import SPECFORGE, load
from tests.test_ingest_specforge import points


@pytest.mark.parametrize(
    "name,stored",
    [
        ("acc_0", "train/acc_0"),  # the console without a tracker: bare names
        ("ploss_3", "train/ploss_3"),
        ("loss", "train/loss"),
        ("lr", "train/lr"),
        ("acceptance_rate_1", "train/acceptance_rate_1"),
        ("perf/optimizer_step_time_s", "train/perf/optimizer_step_time_s"),
        ("train/acc_0", "train/acc_0"),  # the tracker's names, and the 2025 console's
        ("eval/ploss_2", "eval/ploss_2"),
        ("eval/per_position_acc/1", "eval/acc_1"),  # a list metric as `name/index`
        ("train/acc/2", "train/acc_2"),
        ("acc/0", "train/acc_0"),
        ("val/loss_0", "val/loss_0"),  # speculators' validation namespace stays
    ],
)
def test_names_map_onto_specdash_metrics_by_one_rule(name, stored):
    assert stored_name(name) == stored


def test_list_values_become_name_index():
    assert list(flatten("eval/per_position_acc", [0.5, 0.25])) == [
        ("eval/per_position_acc/0", 0.5),
        ("eval/per_position_acc/1", 0.25),
    ]
    assert list(flatten("note", "text")) == [] and list(flatten("flag", True)) == []


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


def read_config(path) -> tuple[list, list, list]:
    """(runs, checkpoints, problems) the config reader gives for `path`."""
    assert reader_for(str(path)) is specforge_config.READER
    items = list(specforge_config.read(str(path)))
    records = [i.record for i in items if not isinstance(i, Problem)]
    return (
        [r for r in records if isinstance(r, RunRecord)],
        [r for r in records if isinstance(r, CheckpointRecord)],
        [i for i in items if isinstance(i, Problem)],
    )


def test_a_yaml_config_is_the_run_it_trains():
    (run,), checkpoints, problems = read_config(SPECFORGE / "qwen3-8b-eagle3-offline.yaml")
    assert not problems and not checkpoints  # ./outputs/... is not beside the fixture
    assert (run.name, run.framework, run.speculative_algorithm, run.ttt_length, run.target_model) == (
        "qwen3-8b-eagle3-offline",
        "specforge",
        "EAGLE3",
        3,
        "Qwen3-8B",
    )
    assert run.config["report_to"] == "tensorboard"
    assert run.config["output_dir"] == "./outputs/qwen3-8b-eagle3-offline"


def test_a_json_config_of_a_block_drafter():
    (run,), _checkpoints, problems = read_config(SPECFORGE / "qwen3-8b-dflash-online.json")
    assert not problems
    # DFlash trains a block of 16 (draft_block_size): 15 positions after the anchor
    assert (run.name, run.speculative_algorithm, run.ttt_length) == ("qwen3-8b-dflash-online", "DFLASH", 15)
    assert run.config["report_to"] == "mlflow"


def test_checkpoints_come_from_the_output_folder(tmp_path):
    config = tmp_path / "qwen3-8b-eagle3-offline.yaml"
    shutil.copy(SPECFORGE / "qwen3-8b-eagle3-offline.yaml", config)
    out = tmp_path / "outputs" / "qwen3-8b-eagle3-offline"
    for step in (10, 20, 30):
        (out / f"qwen3-8b-eagle3-offline-step{step}").mkdir(parents=True)
        (out / f"qwen3-8b-eagle3-offline-step{step}" / "training_state.pt").write_bytes(b"")
    (out / "qwen3-8b-eagle3-offline-step40").mkdir()  # still being written: no training_state.pt yet
    (out / "qwen3-8b-eagle3-offline-latest").symlink_to(out / "qwen3-8b-eagle3-offline-step30")
    (out / "other-run-step10").mkdir()
    (out / "other-run-step10" / "training_state.pt").write_bytes(b"")
    (run,), checkpoints, problems = read_config(config)
    assert not problems
    assert [(c.run, c.name, c.step) for c in checkpoints] == [
        (run.name, f"qwen3-8b-eagle3-offline-step{s}", s) for s in (10, 20, 30)
    ]
    assert checkpoints[0].path == str(out / "qwen3-8b-eagle3-offline-step10")


def test_a_broken_config_is_a_problem_at_its_line(tmp_path):
    config = tmp_path / "broken.yaml"
    config.write_text("model:\n  target_model_path: Qwen/Qwen3-8B\ntraining:\n  strategy: [eagle3\n")
    _runs, _checkpoints, problems = read_config(config)
    # the flow sequence opened on line 4 is still open where the stream ends, on line 5
    assert [(p.line, p.message.split(":")[0]) for p in problems] == [(5, "invalid YAML")]
