"""Revision 0015 adds leaderboard_entry, created empty; `specdash init` (db/schema.upgrade) fills it in from
the stored benchmarks: a store at 0014 with the demo and the real SpecBundle results keeps every row
through the upgrade, gets its entries, and its Leaderboard then ranks as the published file says; a
downgrade to 0014 drops the table and keeps the rest."""

import sqlite3

import pytest

from specdash.app.board_frames import board_frame
from specdash.db.engine import reading
from specdash.db.leaderboard import LeaderboardFilter, leaderboard
from specdash.db.schema import downgrade, upgrade
from tests.app.views.test_leaderboard import LLAMA8B, LLAMA8B_DEPLOYMENT, deployment_id, published_speedups
from tests.conftest import sqlite_url
from tests.db.leaderboard_reference import pandas_leaderboard
from tests.db.test_leaderboard_ranking import assert_same
from tests.migration_support import copied_store


def tables(path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as con:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            name: sorted(map(repr, con.execute(f'SELECT * FROM "{name}"')))
            for name in names
            if name not in ("alembic_version", "leaderboard_entry", "load_fit")  # load_fit: 0016's, derived
        }


def test_the_upgrade_keeps_every_row_and_fills_in_the_entries(real_url, tmp_path):
    path = tmp_path / "at-0014.db"
    engine = copied_store(real_url, path)
    downgrade(engine, "0014")
    before = tables(path)
    assert "leaderboard_entry" not in {r for r in before}
    upgrade(engine, "0015")
    assert tables(path) == before
    upgrade(engine)  # to the head: the pages below read with today's models
    with sqlite3.connect(path) as con:
        views = con.execute(
            "SELECT source, rank_by, across, count(*) FROM leaderboard_entry GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
        ).fetchall()
    # the demo's external source has gaps too: each source's entries, ranked both ways
    assert {(source, rank_by) for source, rank_by, _, _ in views} == {
        (s, r) for s in ("roofline-sim", "theory") for r in ("measured", "predicted")
    }
    # gsm8k on Llama-3.1-8B at batch 1: each drafter's best published speedup there, worked from the file
    best: dict[str, float] = {}
    for (drafter, _, benchmark), value in published_speedups(LLAMA8B).items():
        if benchmark == "gsm8k":
            best[drafter] = max(best.get(drafter, 0.0), value)
    flt = LeaderboardFilter(
        deployment_id=deployment_id(sqlite_url(path), LLAMA8B_DEPLOYMENT), dataset="gsm8k"
    )
    with reading(engine) as session:
        table = board_frame(leaderboard(session, flt))
        assert table["run"].tolist() == sorted(best, key=lambda d: -best[d])
        assert table["measured_speedup"].tolist() == pytest.approx(sorted(best.values(), reverse=True))
        for view in [flt, LeaderboardFilter(), LeaderboardFilter(rank_by="predicted", dataset="mtbench")]:
            assert_same(board_frame(leaderboard(session, view)), pandas_leaderboard(session, view))
    downgrade(engine, "0014")
    with sqlite3.connect(path) as con:
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "leaderboard_entry" not in names and tables(path) == before
