"""W&B offline runs written in each test by the SDK itself (wandb.init(mode="offline"), no network; the wandb
extra), read by the tracker reader. The numbers are the test's own."""

import math

import pytest

from specdash.ingest.problems import Problem
from specdash.ingest.trackers import reader_for, wandb_offline
from tests.tracker_support import collect

wandb = pytest.importorskip("wandb")

SPECFORGE_CONFIG = {  # what SpecForge puts under `specforge_config` (cfg.model_dump), in part
    "model": {"target_model_path": "Qwen/Qwen3-8B", "draft_block_size": 16},
    "training": {"strategy": "dflash", "ttt_length": 7},
    "run_id": "qwen3-8b-dflash-online",
    "output_dir": "./outputs/qwen3-8b-dflash-online",
}


@pytest.fixture
def offline(tmp_path, monkeypatch):
    for name in ("WANDB_DIR", "WANDB_CACHE_DIR", "WANDB_CONFIG_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")

    def write(name: str, history: dict[int, dict], config: dict) -> None:
        run = wandb.init(mode="offline", dir=str(tmp_path), project="specforge", name=name, config=config)
        for step, values in history.items():  # as SpecForge's WandbTracker.log: one commit a step
            run.log(values, step=step, commit=True)
        run.finish()
        wandb.teardown()  # the service writes the log behind finish(); teardown waits for it

    yield write, tmp_path
    wandb.teardown()


def test_an_offline_run_of_specforge(offline):
    write, tmp_path = offline
    history = {
        10: {"train/acc_0": 0.625, "train/ploss_0": 2.25, "train/loss": 6.5, "train/lr": 1e-05},
        20: {"train/acc_0": 0.6875, "train/ploss_0": 1.875, "train/loss": 5.75, "train/lr": 2e-05},
        30: {"eval/per_position_acc/0": 0.75, "eval/per_position_acc/1": 0.5625, "train/loss": math.nan},
    }
    write("qwen3-8b-dflash-online", history, {"report_to": "wandb", "specforge_config": SPECFORGE_CONFIG})
    (folder,) = (tmp_path / "wandb").glob("offline-run-*")
    assert reader_for(str(tmp_path / "wandb")) is wandb_offline.READER
    assert reader_for(str(folder)) is wandb_offline.READER
    runs, got, problems = collect(wandb_offline.read(str(folder)))
    (run,) = runs
    # the run's algorithm, TTT length (a DFlash block of 16: 15) and target from specforge_config
    assert (run.name, run.framework, run.speculative_algorithm, run.ttt_length, run.target_model) == (
        "qwen3-8b-dflash-online",
        "specforge",
        "DFLASH",
        15,
        "Qwen3-8B",
    )
    name = "qwen3-8b-dflash-online"
    assert got[(name, "train/acc_0", 20)] == 0.6875 and got[(name, "train/lr", 10)] == pytest.approx(1e-05)
    assert got[(name, "eval/acc_0", 30)] == 0.75 and got[(name, "eval/acc_1", 30)] == 0.5625
    assert len(got) == 4 + 4 + 2  # _step, _timestamp and _runtime are W&B's own, not metrics
    # the NaN loss at step 30 is a problem at its key
    assert [(p.field, p.message) for p in problems] == [
        ("train/loss", "must be a finite number, not nan (step 30)")
    ]


def test_a_torn_log_ends_at_its_last_whole_record(offline):
    write, tmp_path = offline
    write("run7", {step: {"train/acc_0": 0.5} for step in range(1, 6)}, {"ttt_length": 5})
    (file,) = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    runs, got, problems = collect(wandb_offline.read(str(file)))
    assert not problems and [(r.name, r.ttt_length) for r in runs] == [("run7", 5)]
    assert sorted(step for _run, _key, step in got) == [1, 2, 3, 4, 5]
    data = file.read_bytes()
    file.write_bytes(data[: len(data) // 2])  # a run still writing, cut anywhere
    _runs, cut, problems = collect(wandb_offline.read(str(file)))
    assert not problems and set(cut) <= set(got)


def test_other_files_are_no_wandb_run(tmp_path):
    bogus = tmp_path / "run-x.wandb"
    bogus.write_bytes(b"not a transaction log")
    assert not wandb_offline.detect(str(bogus))
    assert [p.message for p in wandb_offline.read(str(bogus)) if isinstance(p, Problem)] == [
        "not a W&B transaction log (no :W&B header)"
    ]
