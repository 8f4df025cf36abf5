"""Revision 0020 widens the Leaderboard entries' checkpoint index with the deployment and load, and indexes
the benchmarks that state their tokens by deployment: a store at 0019 holding the demo, the real
SpecBundle results and benchmarks with stated contexts keeps every row through the upgrade; a refresh's
delete of one place's entries and its read of a deployment's contexts then search their indexes (the
delete walked every entry of its source before); a downgrade restores the old index and keeps the rows."""

import sqlite3

from sqlalchemy import inspect

from specdash.db.schema import current_revision, downgrade, upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.db.test_incremental_refresh import H100, eagle, lines
from tests.migration_support import all_rows, copied_store

# what one window's refresh runs (db/leaderboard_entries._rewrite at a place, db/refresh_context.py)
PLACE_DELETE = (
    "DELETE FROM leaderboard_entry WHERE source = ? AND deployment_id IN (?) AND concurrency IN (?)"
    " AND checkpoint_id IN (?)"
)
CONTEXTS = (
    "SELECT DISTINCT deployment_id, input_tokens, output_tokens FROM benchmark"
    " WHERE input_tokens IS NOT NULL AND superseded_by_id IS NULL AND deployment_id IN (?)"
)


def plan(path, statement: str) -> str:
    with sqlite3.connect(path) as con:
        bound = (None,) * statement.count("?")  # the plan of the statement as a refresh prepares it
        return " ".join(row[-1] for row in con.execute("EXPLAIN QUERY PLAN " + statement, bound))


def indexes(engine, table: str) -> dict[str, list[str]]:
    return {ix["name"]: ix["column_names"] for ix in inspect(engine).get_indexes(table)}


def test_rows_survive_and_one_places_refresh_reads_its_indexes(real_url, tmp_path):
    path = tmp_path / "at-0019.db"
    engine = copied_store(real_url, path)
    stated = [
        eagle("stated", "epoch_1", H100, load, 150.0, 2.0)
        | {"input_tokens": 512 * load, "output_tokens": 256}
        for load in (1, 2, 4)
    ]
    assert ingest(engine, UploadSource("stated.jsonl", lines(*stated))).ok
    downgrade(engine, "0019")
    before = all_rows(path)
    assert "ix_benchmark_contexts" not in indexes(engine, "benchmark")
    assert "USING INDEX sqlite_autoindex_leaderboard_entry_1 (source=?)" in plan(path, PLACE_DELETE)
    upgrade(engine, "0020")
    assert current_revision(engine) == "0020"
    assert all_rows(path) == before
    assert indexes(engine, "leaderboard_entry")["ix_leaderboard_entry_checkpoint"] == [
        "checkpoint_id",
        "source",
        "deployment_id",
        "concurrency",
    ]
    assert (
        "ix_leaderboard_entry_checkpoint (checkpoint_id=? AND source=? AND deployment_id=? AND concurrency=?)"
        in plan(path, PLACE_DELETE)
    )
    assert "COVERING INDEX ix_benchmark_contexts (deployment_id=? AND input_tokens>?)" in plan(path, CONTEXTS)
    with sqlite3.connect(path) as con:
        stated_rows = con.execute(CONTEXTS.replace("IN (?)", "IN (SELECT id FROM deployment)")).fetchall()
    assert sorted(row[1:] for row in stated_rows) == [(512.0, 256.0), (1024.0, 256.0), (2048.0, 256.0)]
    downgrade(engine, "0019")
    assert indexes(engine, "leaderboard_entry")["ix_leaderboard_entry_checkpoint"] == [
        "checkpoint_id",
        "source",
    ]
    assert "ix_benchmark_contexts" not in indexes(engine, "benchmark")
    assert all_rows(path) == before
    upgrade(engine)
    engine.dispose()
