"""A Trackio project store written in the test by Trackio itself (speculators' --logger trackio), read by the
tracker reader through Trackio's documented SQLite schema. The numbers are the test's own."""

import pytest

from specdash.ingest.problems import Problem
from specdash.ingest.trackers import reader_for, trackio_store
from tests.tracker_support import collect


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))
    trackio = pytest.importorskip("trackio")
    # speculators' TrackioHandler: trackio.init(name=..., config=..., project="speculators"), then log per step
    trackio.init(
        project="speculators",
        name="llama31-eagle3",
        config={"ttt_length": 5, "verifier": "meta-llama/Llama-3.1-8B-Instruct"},
    )
    trackio.log(
        {"train/loss_0": 2.25, "train/cond_acc_0": 0.75, "train/cond_acc_1": 0.5, "lr": 0.0001}, step=100
    )
    trackio.log(
        {"train/loss_0": 2.0, "train/cond_acc_0": 0.8125, "train/cond_acc_1": 0.5625, "lr": 0.0002}, step=200
    )
    trackio.log({"val/loss_0": 2.125, "val/cond_acc_0": 0.78125}, step=200)
    trackio.finish()
    return tmp_path / "trackio"


def test_a_speculators_run_in_trackio(store):
    db = store / "speculators.db"
    assert reader_for(str(db)) is trackio_store.READER and reader_for(str(store)) is trackio_store.READER
    runs, got, problems = collect(trackio_store.read(str(store)))
    assert not problems
    assert [(r.name, r.ttt_length, r.target_model) for r in runs] == [
        ("llama31-eagle3", 5, "Llama-3.1-8B-Instruct")
    ]
    run = "llama31-eagle3"
    # speculators' conditional accuracy is specdash's acc_i too, by the same rule as its console
    assert got[(run, "train/cond_acc_1", 200)] == 0.5625 and got[(run, "train/acc_1", 200)] == 0.5625
    assert got[(run, "train/lr", 100)] == 0.0001
    assert got[(run, "val/cond_acc_0", 200)] == 0.78125 and got[(run, "eval/acc_0", 200)] == 0.78125
    # two training steps of 4 keys and 2 aliases, and the validation row of 2 keys and 1 alias
    assert len(got) == 6 + 6 + 3


def test_other_databases_are_no_trackio_store(tmp_path):
    import sqlite3

    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE metrics (x)")
    assert not trackio_store.detect(str(other))
    assert isinstance(next(trackio_store.read(str(other))), Problem)
