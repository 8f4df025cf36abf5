"""SpecForge's training configs (YAML or JSON) and the checkpoint folders beside them. Every expected value
is read off the fixture (tests/fixtures/specforge/README.md says where each shape comes from)."""

import shutil

from specdash.ingest.formats import specforge_config
from specdash.ingest.problems import Problem
from specdash.ingest.records import CheckpointRecord, RunRecord
from specdash.ingest.trackers import reader_for
from tests.ingest_support import SPECFORGE


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
