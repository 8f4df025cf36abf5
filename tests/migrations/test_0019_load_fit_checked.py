"""Revision 0019 adds to load_fit how far each stored fit's data was checked (checked_through,
checked_benchmarks) and its shape, empty: a store at 0018 with the demo, the real SpecBundle results and
a deployment measured only with speculation keeps every row through the upgrade, its fit among them; the
next refresh checks the fit in full, keeps it and fills the three; a downgrade drops them and keeps the
rest."""

import sqlite3

from specdash.answers.refresh import refresh
from specdash.db.engine import transaction
from specdash.db.schema import current_revision, downgrade, upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.db.test_loadmodels import _sweep_lines
from tests.migration_support import all_rows, copied_store, tables

ADDED = ("checked_through", "checked_benchmarks", "shape")


def rows(path) -> dict[str, list[str]]:
    """Every table's rows, load_fit's without the columns 0019 adds."""
    return all_rows(path, skip_columns={"load_fit": ADDED})


def test_the_upgrade_keeps_every_fit_and_the_next_refresh_checks_it(real_url, tmp_path):
    path = tmp_path / "at-0018.db"
    engine = copied_store(real_url, path)
    assert ingest(engine, UploadSource("sweep.jsonl", _sweep_lines((1, 8), range(2)))).ok
    downgrade(engine, "0018")
    before = rows(path)
    assert len(before["load_fit"]) == 1 and not set(ADDED) & set(tables(path)["load_fit"])
    upgrade(engine, "0019")
    assert current_revision(engine) == "0019"
    assert rows(path) == before
    with sqlite3.connect(path) as con:
        assert con.execute(f"SELECT {', '.join(ADDED)} FROM load_fit").fetchall() == [(None, None, None)]
    with transaction(engine) as session:
        assert refresh(session).refitted == []  # the fit stored before the upgrade holds
    with sqlite3.connect(path) as con:
        latest = con.execute("SELECT max(id) FROM benchmark").fetchone()[0]
        checked = con.execute(
            "SELECT benchmarks, checked_through, checked_benchmarks FROM load_fit"
        ).fetchall()
        assert checked == [(12, latest, 12)]
    downgrade(engine, "0018")
    assert not set(ADDED) & set(tables(path)["load_fit"]) and len(rows(path)["load_fit"]) == 1
    upgrade(engine)
    engine.dispose()
