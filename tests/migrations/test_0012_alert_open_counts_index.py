"""Revision 0012 indexes the open-alert counts (alert.status, is_alert, severity, code): a database at 0011
keeps every alert through the upgrade, the Overview's count then reads the index alone, and a downgrade to
0011 drops the index and keeps the alerts."""

import sqlite3

from sqlalchemy import inspect

from specdash.db import queries
from specdash.db.engine import reading
from specdash.db.schema import current_revision, downgrade, upgrade
from tests.migration_support import copied_store

OPEN_COUNTS = "SELECT severity, count(*) FROM alert WHERE status = 'open' AND is_alert = 1 GROUP BY severity"


def _plan(path) -> str:
    with sqlite3.connect(path) as con:
        return " ".join(row[-1] for row in con.execute("EXPLAIN QUERY PLAN " + OPEN_COUNTS))


def _alerts(path) -> list[tuple]:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT * FROM alert ORDER BY benchmark_id").fetchall()


def test_alerts_survive_and_the_open_counts_read_the_index(demo_url, tmp_path):
    path = tmp_path / "at-0011.db"
    engine = copied_store(demo_url, path)
    downgrade(engine, "0011")
    before = _alerts(path)
    # a verdict for each of the demo's 15 benchmarks but its 2 no-speculation baselines
    assert len(before) == 13
    assert "ix_alert_open_counts" not in _plan(path)
    upgrade(engine, "0012")
    assert current_revision(engine) == "0012"
    indexes = {ix["name"]: ix["column_names"] for ix in inspect(engine).get_indexes("alert")}
    assert indexes["ix_alert_open_counts"] == ["status", "is_alert", "severity", "code"]
    assert _alerts(path) == before
    assert "COVERING INDEX ix_alert_open_counts" in _plan(path)
    with reading(engine) as session:
        assert queries.open_alert_counts(session) == {"critical": 1, "warning": 3}
    downgrade(engine, "0011")
    assert "ix_alert_open_counts" not in {ix["name"] for ix in inspect(engine).get_indexes("alert")}
    assert _alerts(path) == before
    engine.dispose()
