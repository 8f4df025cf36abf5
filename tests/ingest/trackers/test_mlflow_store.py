"""MLflow tracking stores created in each test by MLflow's own client (the trackers extra): a SQLite store
(mlflow.db), a file store (mlruns/), and the client path a tracking server takes. Numbers are the test's own."""

import math

import pytest

from specdash.ingest.problems import Problem
from specdash.ingest.trackers import mlflow_store, reader_for
from tests.tracker_support import collect, fill_mlflow

mlflow = pytest.importorskip("mlflow")

HISTORY = {
    10: {"train/acc_0": 0.625, "train/acc_1": 0.4375, "train/loss": 6.5, "train/lr": 1e-05},
    20: {"train/acc_0": 0.6875, "train/acc_1": 0.5, "train/loss": 5.75, "train/lr": 2e-05},
    30: {"eval/per_position_acc/0": 0.75, "eval/per_position_acc/1": 0.5625},
}
# what an older SpecForge script or speculators logs as params: its arguments
PARAMS = {
    "ttt_length": "7",
    "target_model_path": "/models/meta-llama/Llama-3.1-8B-Instruct",
    "report_to": "mlflow",
}


def fill(uri: str, run_name: str, history=HISTORY, params=PARAMS, finish=True) -> str:
    return fill_mlflow(uri, run_name, history, params, finish)


def check(got, run):
    got = {key: value for key, value in got.items() if key[0] == run}
    assert len(got) == 4 + 4 + 2
    assert got[(run, "train/acc_1", 20)] == 0.5 and got[(run, "train/lr", 10)] == pytest.approx(1e-05)
    assert got[(run, "eval/acc_0", 30)] == 0.75 and got[(run, "eval/acc_1", 30)] == 0.5625  # name/index


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One SQLite store for the module (MLflow migrates a new one for seconds): three runs."""
    db = tmp_path_factory.mktemp("mlflow") / "mlflow.db"
    uri = f"sqlite:///{db}"
    run_id = fill(uri, "llama31-eagle3")
    fill(uri, "llama31-eagle3-running", {5: {"train/loss": 9.0}}, {}, finish=False)
    fill(uri, "diverged", {40: {"train/loss": math.nan, "train/acc_0": 0.25}}, {})
    return db, run_id


def test_a_sqlite_store(store):
    db, run_id = store
    assert reader_for(str(db)) is mlflow_store.READER
    assert reader_for(f"sqlite:///{db}") is mlflow_store.READER
    runs, got, problems = collect(mlflow_store.read(str(db)))
    assert [(r.name, r.status, r.ttt_length, r.target_model) for r in runs] == [
        ("llama31-eagle3", "finished", 7, "Llama-3.1-8B-Instruct"),
        ("llama31-eagle3-running", "running", None, None),
        ("diverged", "finished", None, None),
    ]
    assert runs[0].config["mlflow_run_id"] == run_id and runs[0].config["experiment"] == "specforge"
    check(got, "llama31-eagle3")
    assert got[("llama31-eagle3-running", "train/loss", 5)] == 9.0
    # a NaN in a history is a problem at its key; the step's other values stand
    assert [(p.field, p.message) for p in problems] == [
        ("train/loss", "must be a finite number, not nan (step 40)")
    ]
    assert got[("diverged", "train/acc_0", 40)] == 0.25 and ("diverged", "train/loss", 40) not in got


def test_the_client_path_of_a_tracking_server(store):
    db, _run_id = store
    runs, got, problems = collect(mlflow_store.read_with_client(f"sqlite:///{db}", "server", None))
    assert [r.name for r in runs] == ["llama31-eagle3", "llama31-eagle3-running", "diverged"]
    assert [p.field for p in problems] == ["train/loss"]
    check(got, "llama31-eagle3")


def test_a_file_store(tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps mlruns/ behind this switch
    fill((tmp_path / "mlruns").as_uri(), "llama31-eagle3")
    assert reader_for(str(tmp_path / "mlruns")) is mlflow_store.READER
    runs, got, problems = collect(mlflow_store.read(str(tmp_path / "mlruns")))
    assert not problems
    assert [(r.name, r.status, r.ttt_length) for r in runs] == [("llama31-eagle3", "finished", 7)]
    check(got, "llama31-eagle3")


def test_other_files_are_no_mlflow_store(tmp_path):
    other = tmp_path / "other.db"
    import sqlite3

    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE runs (x)")
    assert not mlflow_store.detect(str(other)) and not mlflow_store.detect(str(tmp_path))
    assert isinstance(next(mlflow_store.read(str(other))), Problem)
