"""Revision 0018 adds the Overview's summary rows, parity_count and run_checkpoints, filled from the store:
a store at 0017 with the demo, the real SpecBundle results, a later file and a superseded benchmark keeps
every row through the upgrade and gets summary rows equal to a plain recount; a downgrade to 0017 drops
the two tables and keeps the rest."""

import sqlite3

from sqlalchemy import Engine

from specdash.db.schema import current_revision, downgrade, upgrade
from tests.db.summary_support import assert_kept, ingested, second_file, supersede
from tests.migration_support import all_rows, copied_store, tables

SUMMARIES = ("parity_count", "run_checkpoints")


def rows(path) -> dict[str, list[str]]:
    return all_rows(path, skip=SUMMARIES)


def at_0017_with_a_superseded_benchmark(engine: Engine) -> None:
    """A later file into the store, the demo's EAGLE-flag benchmark superseded by its rerun, then the
    store taken down to 0017."""
    ingested(engine, "later.jsonl", second_file(180.0))
    supersede(engine, 3, 4)  # tests/db/test_alerts.py
    downgrade(engine, "0017")


def upgraded_to_0018(engine: Engine) -> dict[str, int]:
    """The store at 0017 upgraded: its summary rows are the recount's; returns the parity counts."""
    upgrade(engine, "0018")
    assert current_revision(engine) == "0018"
    parity = assert_kept(engine, "upgrade to 0018")
    assert parity["theory"] > 0 and parity["roofline-sim"] > 0
    return parity


def test_the_upgrade_fills_the_summaries_as_a_recount_does_and_keeps_every_row(real_url, tmp_path):
    path = tmp_path / "at-0017.db"
    engine = copied_store(real_url, path)
    at_0017_with_a_superseded_benchmark(engine)
    before = rows(path)
    assert not set(SUMMARIES) & set(tables(path))
    upgraded_to_0018(engine)
    assert rows(path) == before
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT count(*) FROM run_checkpoints").fetchone()[0] > 10
    downgrade(engine, "0017")
    assert not set(SUMMARIES) & set(tables(path)) and rows(path) == before
    upgrade(engine)
    engine.dispose()
