"""Revision 0010 adds prediction.baseline_estimated: predictions stored at 0009 survive the upgrade with
every value, and read as resting on a measured or stated baseline (none was estimated before 0010)."""

import sqlite3

from specdash.db.engine import make_engine
from specdash.db.schema import current_revision, head_revision, upgrade
from tests.conftest import sqlite_url
from tests.migration_support import fill_at, table_rows


def test_predictions_of_0009_survive_and_are_not_estimated(demo_url, tmp_path):
    head = demo_url.removeprefix("sqlite:///")
    path = tmp_path / "at-0009.db"
    written = fill_at("0009", _copy(head, tmp_path), path)
    columns, rows = written["prediction"]
    assert rows and "baseline_estimated" not in columns
    engine = make_engine(sqlite_url(path))
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    engine.dispose()
    assert table_rows(path, "prediction", columns) == rows
    with sqlite3.connect(path) as con:
        flags = {row[0] for row in con.execute("SELECT baseline_estimated FROM prediction")}
    assert flags == {0}


def _copy(source: str, tmp_path):
    target = tmp_path / "head.db"
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return target
