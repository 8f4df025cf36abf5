"""Revision 0011 indexes the baselines (benchmark.speculative_algorithm, deployment_id, concurrency): a
database at 0010 keeps every benchmark through the upgrade, and the refresh's read of a deployment's
baselines then searches the index instead of walking the deployment's benchmarks."""

import sqlite3

from sqlalchemy import inspect

from specdash.db.schema import downgrade, upgrade
from tests.migration_support import copied_store

BASELINES = (
    "SELECT deployment_id, concurrency, dataset, decode_tps FROM benchmark "
    "WHERE speculative_algorithm IS NULL AND superseded_by_id IS NULL AND deployment_id IN (1)"
)


def test_benchmarks_survive_and_the_baselines_are_searched_by_index(demo_url, tmp_path):
    path = tmp_path / "at-0010.db"
    engine = copied_store(demo_url, path)
    downgrade(engine, "0010")
    with sqlite3.connect(path) as con:
        before = con.execute("SELECT * FROM benchmark ORDER BY id").fetchall()
        plan = " ".join(row[-1] for row in con.execute("EXPLAIN QUERY PLAN " + BASELINES))
    assert "ix_benchmark_baselines" not in plan
    upgrade(engine, "0011")
    indexes = {ix["name"]: ix["column_names"] for ix in inspect(engine).get_indexes("benchmark")}
    assert indexes["ix_benchmark_baselines"] == ["speculative_algorithm", "deployment_id", "concurrency"]
    engine.dispose()
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT * FROM benchmark ORDER BY id").fetchall() == before
        assert len(before) == 15  # the demo file's 15 benchmarks, its 2 baselines included
        plan = " ".join(row[-1] for row in con.execute("EXPLAIN QUERY PLAN " + BASELINES))
    assert "USING INDEX ix_benchmark_baselines" in plan
