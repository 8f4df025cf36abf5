"""Revision 0008 moves each gap's status, note and history to its benchmark's alert: an investigation under
way before the upgrade is still under way after it, with every history entry."""

import sqlite3

from sqlalchemy import select

from specdash.answers.refresh import refresh
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert, AlertEvent
from specdash.db.schema import downgrade, upgrade
from tests.conftest import sqlite_url
from tests.migration_support import fill_at


def _before(demo_url, tmp_path):
    """The demo data in a database at revision 0007 (the one before 0008), with investigations on its gaps."""
    source = tmp_path / "head.db"
    with sqlite3.connect(demo_url.removeprefix("sqlite:///")) as src, sqlite3.connect(source) as dst:
        src.backup(dst)
    path = tmp_path / "at-0007.db"
    fill_at("0007", source, path)
    with sqlite3.connect(path) as con:
        gaps = {
            (b, s): g
            for g, b, s in con.execute(
                "SELECT g.id, g.benchmark_id, p.source FROM gap g JOIN prediction p ON p.id = g.prediction_id"
            )
        }
        story, b9_theory, b9_external = gaps[(3, "theory")], gaps[(9, "theory")], gaps[(9, "roofline-sim")]
        con.execute(
            "UPDATE gap SET status = 'explained', note = 'served with EAGLE', "
            "updated_at = '2026-11-30 10:00:00' WHERE id = ?",
            (story,),
        )
        # benchmark 9: investigated against theory first, dismissed against the external source later
        con.execute(
            "UPDATE gap SET status = 'investigating', note = 'looking', updated_at = '2026-11-30 09:00:00' "
            "WHERE id = ?",
            (b9_theory,),
        )
        con.execute(
            "UPDATE gap SET status = 'dismissed', note = 'simulator off', "
            "updated_at = '2026-11-30 11:00:00' WHERE id = ?",
            (b9_external,),
        )
        con.executemany(
            "INSERT INTO gap_event (gap_id, at, who, from_status, to_status, note) VALUES (?, ?, ?, ?, ?, ?)",
            [
                (story, "2026-11-30 09:30:00", "ana", "open", "investigating", "checking flags"),
                (story, "2026-11-30 10:00:00", "ana", "investigating", "explained", "served with EAGLE"),
                (b9_theory, "2026-11-30 09:00:00", "ben", "open", "investigating", "looking"),
                (b9_external, "2026-11-30 11:00:00", "ben", "open", "dismissed", "simulator off"),
            ],
        )
    return path


def test_statuses_notes_and_history_survive_the_upgrade(demo_url, tmp_path):
    path = _before(demo_url, tmp_path)
    engine = make_engine(sqlite_url(path))
    upgrade(engine)
    with reading(engine) as session:
        alerts = {a.benchmark_id: a for a in session.scalars(select(Alert))}
        events = session.execute(
            select(AlertEvent.benchmark_id, AlertEvent.who, AlertEvent.to_status, AlertEvent.note).order_by(
                AlertEvent.id
            )
        ).all()
    assert len(alerts) == 13  # one per benchmark with gaps (3 of them had two)
    assert (alerts[3].status, alerts[3].note) == ("explained", "served with EAGLE")
    assert (alerts[9].status, alerts[9].note) == ("dismissed", "simulator off")  # the one changed last
    assert {a.status for bid, a in alerts.items() if bid not in (3, 9)} == {"open"}
    assert [tuple(e) for e in events] == [
        (3, "ana", "investigating", "checking flags"),
        (3, "ana", "explained", "served with EAGLE"),
        (9, "ben", "investigating", "looking"),
        (9, "ben", "dismissed", "simulator off"),
    ]
    # 0001 judged by the threshold alone: the EAGLE-flag benchmark (49 %) and the 16-token one (22 %)
    assert {bid for bid, a in alerts.items() if a.is_alert} == {3, 12}
    # the next refresh applies the new rules and keeps the investigation
    with transaction(engine) as session:
        refresh(session)
    with reading(engine) as session:
        story = session.get(Alert, 3)
        assert (story.status, story.note, story.code) == (
            "explained",
            "served with EAGLE",
            "algorithm_mismatch",
        )
    engine.dispose()


def test_downgrade_gives_every_gap_its_benchmarks_status(demo_url, tmp_path):
    path = _before(demo_url, tmp_path)
    engine = make_engine(sqlite_url(path))
    upgrade(engine)
    downgrade(engine, "0007")
    engine.dispose()
    with sqlite3.connect(path) as con:
        statuses = dict(
            con.execute(
                "SELECT p.source || ':' || g.benchmark_id, g.status FROM gap g JOIN prediction p ON p.id = g.prediction_id "
                "WHERE g.benchmark_id IN (3, 9)"
            )
        )
        events = con.execute("SELECT count(*) FROM gap_event").fetchone()[0]
    assert statuses == {"theory:3": "explained", "theory:9": "dismissed", "roofline-sim:9": "dismissed"}
    assert events == 4
