"""The Upload page takes a tracker's binary files (a TensorBoard event file, an mlflow.db) as `specdash
ingest` does: the same dry run, the same save through ingest/pipeline.py. The files are written in the test
by the trackers' own writers (tensorboardX, MLflow's client); the numbers are the test's own."""

import pytest

from specdash.app.text import unmd
from specdash.db.engine import make_engine
from specdash.ingest.pipeline import ingest, preview_ingest
from specdash.ingest.sources import UploadSource
from specdash.ingest.trackers import tensorboard as tb
from tests.app_support import run_page
from tests.ingest_support import points
from tests.tracker_support import fill_mlflow, write_events

pytest.importorskip("tensorboardX")
pytest.importorskip("mlflow")

STEPS = {
    100: {"train/acc_0": 0.75, "train/acc_1": 0.5, "train/loss": 3.25},
    200: {"train/acc_0": 0.8125, "train/acc_1": 0.625, "train/loss": 2.75},
}


@pytest.fixture(scope="module")
def tracker_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trackers")
    write_events(folder / "runs", STEPS)
    (event_file,) = tb.event_files(str(folder / "runs"))
    fill_mlflow(f"sqlite:///{folder / 'mlflow.db'}", "qwen3-8b-eagle3-mlflow", STEPS, {"report_to": "mlflow"})
    return [(event_file.name, event_file.read_bytes()), ("mlflow.db", (folder / "mlflow.db").read_bytes())]


def test_binary_tracker_files_preview_and_load_like_a_path(engine, tracker_files):
    (event_name, events), (_db_name, db) = tracker_files
    preview = preview_ingest(engine, UploadSource(event_name, events))
    assert preview.format == "tensorboard" and not preview.problems
    assert preview.store.metric_points == 6 and preview.already_ingested is None
    assert points(engine, "upload") == {}  # a preview writes nothing
    result = ingest(engine, UploadSource("mlflow.db", db))
    assert (result.status, result.format, result.path) == ("loaded", "mlflow", "mlflow.db")
    assert points(engine, "qwen3-8b-eagle3-mlflow")[("train/acc_1", 200)] == 0.625
    assert ingest(engine, UploadSource("mlflow.db", db)).status == "skipped"  # the same store again
    assert preview_ingest(engine, UploadSource("mlflow.db", db)).already_ingested == "mlflow.db"


def test_the_upload_page_saves_an_event_file_and_an_mlflow_db(monkeypatch, db_url, tracker_files):
    at = run_page(monkeypatch, db_url, "views/upload.py")
    files = [(name, data, "application/octet-stream") for name, data in tracker_files]
    at.file_uploader[0].set_value(files).run()
    assert not at.exception
    shown = [unmd(m.value) for m in at.markdown]
    assert any("format `tensorboard`" in text and "6 metric points" in text for text in shown), shown
    assert any("format `mlflow`" in text and "6 metric points" in text for text in shown), shown
    assert [s.value for s in at.success] == ["Valid: ready to save."] * 2
    key = next(k for k in at.session_state if str(k).startswith("upload_links_"))
    at.session_state[key] = {  # the event file's run, typed into the Link table
        "edited_rows": {0: {"run": "qwen3-8b-eagle3-tb"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="upload_save").click().run()
    assert not at.exception
    saved = [unmd(s.value) for s in at.success]
    assert saved[0].startswith(f"{tracker_files[0][0]}: ") and "as tensorboard" in saved[0]
    assert saved[1].startswith("mlflow.db: ") and "as mlflow" in saved[1]
    engine = make_engine(db_url)
    assert points(engine, "qwen3-8b-eagle3-tb")[("train/acc_0", 200)] == 0.8125
    assert points(engine, "qwen3-8b-eagle3-mlflow")[("train/loss", 100)] == 3.25
