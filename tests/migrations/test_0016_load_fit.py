"""Revision 0016 adds load_fit, created empty: a store at 0015 with the demo and the real SpecBundle
results keeps every row through the upgrade; the next refresh fits and stores the load model of each
deployment measured only with speculation; a downgrade to 0015 drops the table and keeps the rest."""

import sqlite3

from specdash.answers.refresh import refresh
from specdash.db.engine import transaction
from specdash.db.schema import current_revision, downgrade, upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.db.test_loadmodels import _sweep_lines
from tests.migration_support import copied_store


def tables(path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            name: sorted(map(repr, con.execute(f'SELECT * FROM "{name}"')))
            for name in names
            if name not in ("alembic_version", "load_fit")
        }


def test_the_upgrade_keeps_every_row_and_the_next_refresh_stores_the_fits(real_url, tmp_path):
    path = tmp_path / "at-0015.db"
    engine = copied_store(real_url, path)
    # a deployment measured only with speculation: its baselines are estimated from a load model
    assert ingest(engine, UploadSource("sweep.jsonl", _sweep_lines((1, 8), range(2)))).ok
    downgrade(engine, "0015")
    before = tables(path)
    with sqlite3.connect(path) as con:
        assert not con.execute("SELECT name FROM sqlite_master WHERE name = 'load_fit'").fetchall()
    upgrade(engine, "0016")
    assert current_revision(engine) == "0016"
    assert tables(path) == before
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT count(*) FROM load_fit").fetchone() == (0,)
    upgrade(engine)  # to the head: the refresh reads with today's models
    with transaction(engine) as session:
        summary = refresh(session)
    assert summary.refitted == ["1x H100, TP1"]
    with sqlite3.connect(path) as con:
        assert con.execute(
            "SELECT d.name, f.benchmarks FROM load_fit f JOIN deployment d ON d.id = f.deployment_id"
        ).fetchall() == [("1x H100, TP1", 12)]
    # the refresh rewrote predictions; what the upgrade must keep is checked above. One step down and up:
    downgrade(engine, "0016")
    after_refresh = tables(path)
    downgrade(engine, "0015")
    with sqlite3.connect(path) as con:
        assert not con.execute("SELECT name FROM sqlite_master WHERE name = 'load_fit'").fetchall()
    assert tables(path) == after_refresh
    upgrade(engine, "0016")
    assert current_revision(engine) == "0016"
    engine.dispose()
