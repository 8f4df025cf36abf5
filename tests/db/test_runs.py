"""Run management: runs by target model with tags and search, archive, delete a run or undo an ingest with
the rows it removes counted first; and the schema revision that holds tags and archiving."""

import sqlite3

from sqlalchemy import func, select

from specdash.answers import edits
from specdash.app.frames import frame
from specdash.app.text import unmd
from specdash.db import runs as run_store
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Benchmark, Checkpoint, Gap, IngestedFile, MetricPoint, Prediction, Run
from specdash.db.schema import upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.app_support import run_page, table_with
from tests.conftest import FIXTURES, sqlite_url

TEN_K = "k25-eagle3-10k"
TTT5 = "k25-eagle3-100k-ttt5"
TABLES = {
    "runs": Run,
    "checkpoints": Checkpoint,
    "benchmarks": Benchmark,
    "predictions": Prediction,
    "gaps and alerts": Gap,
    "metric points": MetricPoint,
}


def counts(url: str) -> dict[str, int]:
    with reading(make_engine(url)) as session:
        return {
            name: session.scalar(select(func.count()).select_from(model)) for name, model in TABLES.items()
        }


def run_id(url: str, name: str) -> int:
    with reading(make_engine(url)) as session:
        return session.scalar(select(Run.id).where(Run.name == name))


def test_deleting_a_run_removes_exactly_what_was_counted(demo_url):
    engine = make_engine(demo_url)
    before = counts(demo_url)
    with reading(engine) as session:
        removal = run_store.run_removal(session, [run_id(demo_url, TEN_K)])
    # the 10k run: one checkpoint (epoch_3), benchmarked twice (the EAGLE-flag run and its EAGLE3 rerun)
    assert removal.rows["runs"] == 1 and removal.rows["checkpoints"] == 1 and removal.rows["benchmarks"] == 2
    assert removal.rows["metric points"] > 0 and removal.rows["gaps and alerts"] >= 2
    with transaction(engine) as session:
        run_store.delete_runs(session, [run_id(demo_url, TEN_K)])
    after = counts(demo_url)
    for name in TABLES:
        assert before[name] - after[name] == removal.rows[name], name


def test_the_page_shows_the_rows_before_it_deletes(monkeypatch, demo_url):
    before = counts(demo_url)
    at = run_page(monkeypatch, demo_url, "views/runs.py")
    editor = next(k for k in at.session_state if str(k).startswith("runs_editor_"))
    row = table_with(at, "tags")["run"].tolist().index(TEN_K)
    at.session_state[editor] = {"edited_rows": {row: {"select": True}}, "added_rows": [], "deleted_rows": []}
    at.run()
    at.button(key="runs_delete").click().run()
    assert not at.exception
    warning = unmd(at.warning[0].value)
    assert (
        warning.startswith(f"Deleting run(s) {TEN_K} removes ") and "1 checkpoints, 2 benchmarks" in warning
    )
    assert counts(demo_url) == before  # nothing yet
    at.button(key="runs_pending_delete_yes").click().run()
    assert not at.exception
    assert counts(demo_url)["runs"] == before["runs"] - 1 and run_id(demo_url, TEN_K) is None


def test_tags_search_and_archive(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/runs.py")
    table = table_with(at, "tags")
    # grouped by target model: sorted by it, runs without one last
    targets = table["target"].tolist()
    known = [t for t in targets if t != "(no target model)"]
    assert known == sorted(known) and targets[len(known) :] == ["(no target model)"] * (
        len(targets) - len(known)
    )
    editor = next(k for k in at.session_state if str(k).startswith("runs_editor_"))
    row = table["run"].tolist().index(TTT5)
    at.session_state[editor] = {
        "edited_rows": {row: {"tags": "Best, ttt-sweep, best"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="runs_save_tags").click().run()
    assert not at.exception
    with reading(make_engine(real_url)) as session:
        assert session.scalar(select(Run.tags).where(Run.name == TTT5)) == ["best", "ttt-sweep"]
    at.text_input(key="runs_search").input("ttt-sweep").run()
    assert table_with(at, "tags")["run"].tolist() == [TTT5]
    assert at.query_params["q"] == "ttt-sweep"
    # archived: gone from the Checkpoints run picker and the leaderboard, data kept
    with transaction(make_engine(real_url)) as session:
        run_store.set_archived(session, [run_id(real_url, TTT5)], True)
    checkpoints = run_page(monkeypatch, real_url, "views/checkpoints.py")
    assert TTT5 not in checkpoints.multiselect(key="checkpoints_runs").options
    board = run_page(monkeypatch, real_url, "views/leaderboard.py")
    assert TTT5 not in table_with(board, "measured_speedup")["run"].tolist()
    assert counts(real_url)["checkpoints"] == 6 + 15


def test_undoing_an_ingest_removes_its_benchmarks_and_lets_it_in_again(demo_url):
    engine = make_engine(demo_url)
    data = (FIXTURES / "dashboard" / "deep_rerun.json").read_bytes()
    before = counts(demo_url)
    assert ingest(engine, UploadSource("deep_rerun.json", data)).ok
    with reading(engine) as session:
        file_id = session.scalar(select(IngestedFile.id).where(IngestedFile.path == "deep_rerun.json"))
        removal = run_store.file_removal(session, file_id)
    assert removal.rows == {"ingested files": 1, "benchmarks": 1, "gaps and alerts": 1}
    with transaction(engine) as session:
        edits.delete_ingested_file(session, file_id)
    assert counts(demo_url)["benchmarks"] == before["benchmarks"]
    assert counts(demo_url)["gaps and alerts"] == before["gaps and alerts"]
    again = ingest(engine, UploadSource("deep_rerun.json", data))
    assert again.ok and again.store.benchmark_ids


def test_runs_from_revision_0005_upgrade_untagged_and_unarchived(tmp_path):
    path = tmp_path / "at-0005.db"
    engine = make_engine(sqlite_url(path))
    upgrade(engine, "0005")
    with sqlite3.connect(path) as con:
        con.execute(
            "INSERT INTO run (name, status, is_demo, created_at) VALUES ('r1', 'finished', 0, '2026-01-01')"
        )
    upgrade(engine)
    with reading(engine) as session:
        run = session.scalars(select(Run).where(Run.name == "r1")).one()
        assert run.tags is None and run.archived_at is None
        assert frame(run_store.runs_table(session), run_store.RunListing)["name"].tolist() == ["r1"]
