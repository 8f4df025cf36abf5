"""Revision 0013 indexes the expression (prediction.source || ''): a database at 0012 keeps every prediction
through the upgrade, the list of sources then walks the index while the parity plot's queries keep their
plans (driven from the gap indexes), and a downgrade to 0012 drops the index and keeps the predictions."""

import sqlite3

from sqlalchemy import insert, select

from specdash.db import queries
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Gap, Prediction
from specdash.db.schema import current_revision, downgrade, upgrade
from tests.migration_support import copied_store

PARITY = (
    "SELECT count(*) FROM gap JOIN benchmark ON gap.benchmark_id = benchmark.id "
    "JOIN prediction ON gap.prediction_id = prediction.id WHERE prediction.source = 'theory'"
)
NEXT_SOURCE = "SELECT min(source || '') FROM prediction WHERE source || '' > 'calibrated'"


def _plan(path, sql: str) -> str:
    with sqlite3.connect(path) as con:
        return " ".join(row[-1] for row in con.execute("EXPLAIN QUERY PLAN " + sql))


def _predictions(path) -> list[tuple]:
    with sqlite3.connect(path) as con:
        return con.execute("SELECT * FROM prediction ORDER BY id").fetchall()


def test_predictions_survive_and_the_sources_walk_the_index(demo_url, tmp_path):
    path = tmp_path / "at-0012.db"
    engine = copied_store(demo_url, path)
    downgrade(engine, "0012")
    before = _predictions(path)
    assert before and "ix_prediction_source_key" not in _plan(path, NEXT_SOURCE)
    upgrade(engine, "0013")
    assert current_revision(engine) == "0013"
    assert _predictions(path) == before
    assert "USING INDEX ix_prediction_source_key" in _plan(path, NEXT_SOURCE)
    # a filter on the column itself does not take the expression's index
    assert "ix_prediction_source_key" not in _plan(path, PARITY)
    with reading(engine) as session:
        # the demo's own predictions and the external file's
        assert queries.prediction_sources(session) == ["theory", "roofline-sim"]
    downgrade(engine, "0012")
    assert "ix_prediction_source_key" not in _plan(path, NEXT_SOURCE)
    assert _predictions(path) == before
    engine.dispose()


def test_a_source_without_gaps_is_not_listed(demo_url):
    """Predictions of a source none of whose predictions meets a benchmark (no gap) stay off the list."""
    engine = make_engine(demo_url)
    with transaction(engine) as session:
        row = session.execute(select(Prediction).where(Prediction.source == "roofline-sim")).scalars().first()
        values = {c.key: getattr(row, c.key) for c in Prediction.__table__.columns if c.key != "id"}
        session.execute(insert(Prediction), [{**values, "source": "unmatched-sim"}])
    with reading(engine) as session:
        assert "unmatched-sim" in set(session.scalars(select(Prediction.source)))
        assert not session.scalar(
            select(Gap.id).join(Prediction).where(Prediction.source == "unmatched-sim").limit(1)
        )
        assert queries.prediction_sources(session) == ["theory", "roofline-sim"]
    engine.dispose()
