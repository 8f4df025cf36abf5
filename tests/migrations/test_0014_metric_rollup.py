"""Revision 0014 adds metric_rollup and fills it in for the points already stored, by the rule the ingest
applies from then on: a database at 0013 keeps every point through the upgrade, a key dense enough gets
its rollups (their sums those of its points), a sparse key or one with a negative step gets none, and a
downgrade to 0013 drops the table and keeps the points."""

import sqlite3

from specdash.app.frames import frame as as_frame
from specdash.db import curves
from specdash.db.engine import reading
from specdash.db.schema import current_revision, downgrade, upgrade
from tests.migration_support import copied_store

DEMO_ROLLUPS = (
    "SELECT run_id, key_id, bucket, n, sum_step, sum_value, min_value, max_value FROM metric_rollup "
    "WHERE key_id IN (SELECT id FROM metric_key WHERE name LIKE 'train/%') ORDER BY 1, 2, 3"
)
DEMO_SUMS = (
    "SELECT run_id, key_id, step / 4096, count(*), sum(step), sum(value), min(value), max(value) "
    "FROM metric_point WHERE key_id IN (SELECT id FROM metric_key WHERE name LIKE 'train/%') "
    "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
)
DEMO_SPANS = (
    "SELECT run_id, key_id, count(*), min(step), max(step) FROM metric_point "
    "WHERE key_id IN (SELECT id FROM metric_key WHERE name LIKE 'train/%') GROUP BY 1, 2"
)
POINTS = "SELECT run_id, key_id, step, value FROM metric_point ORDER BY run_id, key_id, step"


def test_points_survive_and_dense_keys_get_their_rollups(demo_url, tmp_path):
    path = tmp_path / "at-0013.db"
    engine = copied_store(demo_url, path)
    downgrade(engine, "0013")
    with sqlite3.connect(path) as con:
        run_id = con.execute("SELECT min(id) FROM run").fetchone()[0]
        names = ("dense/loss", "sparse/loss", "negative/loss")
        con.executemany("INSERT INTO metric_key (name) VALUES (?)", [(n,) for n in names])
        dense, sparse, negative = (
            con.execute("SELECT id FROM metric_key WHERE name = ?", (n,)).fetchone()[0] for n in names
        )
        rows = [(run_id, dense, s, 1.0 if s < 4096 else 3.0) for s in range(8192)]
        rows += [(run_id, sparse, s, 1.0) for s in range(0, 8192, 500)]  # 17 points in 2 wide buckets
        rows += [(run_id, negative, s, 1.0) for s in range(-1, 8192)]
        con.executemany("INSERT INTO metric_point VALUES (?, ?, ?, ?)", rows)
        before = con.execute(POINTS).fetchall()
    upgrade(engine, "0014")
    assert current_revision(engine) == "0014"
    with sqlite3.connect(path) as con:
        assert con.execute(POINTS).fetchall() == before
        rollups = con.execute(
            "SELECT key_id, width, bucket, n, sum_step, sum_value, min_value, max_value FROM metric_rollup "
            "ORDER BY key_id, width, bucket"
        ).fetchall()
    assert not [r for r in rollups if r[0] in (sparse, negative)]
    assert {r[0] for r in rollups if r[1] == 64} == {dense}
    assert len([r for r in rollups if r[1] == 64]) == 128  # 8,192 / 64
    # the demo's training curves log a step every 50 up to 6,000: 121 points in 2 wide buckets
    assert {r[1] for r in rollups if r[0] != dense} == {4096}
    with sqlite3.connect(path) as con:
        sums = con.execute(DEMO_SUMS).fetchall()
        spans = con.execute(DEMO_SPANS).fetchall()
        stored = con.execute(DEMO_ROLLUPS).fetchall()
    # kept where the points average 16 or more a bucket over the buckets they span
    dense_pairs = {
        (run, key) for run, key, n, first, last in spans if n >= 16 * (last // 4096 - first // 4096 + 1)
    }
    assert 0 < len(dense_pairs) < len(spans)  # runs of 121 points kept, the short ones not
    assert stored == [row for row in sums if (row[0], row[1]) in dense_pairs]
    wide = [r for r in rollups if r[0] == dense and r[1] == 4096]
    assert wide == [
        (dense, 4096, 0, 4096, 4096 * 4095 // 2, 4096.0, 1.0, 1.0),
        (dense, 4096, 1, 4096, sum(range(4096, 8192)), 3 * 4096.0, 3.0, 3.0),
    ]
    with reading(engine) as session:
        frame = as_frame(
            curves.training_curves(session, [run_id], ["dense/loss"], max_points=2), curves.CurvePoint
        )
    assert frame[["step", "value"]].to_numpy().tolist() == [[2047.5, 1.0], [6143.5, 3.0]]
    downgrade(engine, "0013")
    with sqlite3.connect(path) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "metric_rollup" not in tables
        assert con.execute(POINTS).fetchall() == before
    engine.dispose()
