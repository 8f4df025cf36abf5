"""The Overview's summary rows equal a plain recount of the store after every kind of write (SQLite; the
same walk on PostgreSQL is tests/db/test_postgres.py's)."""

from specdash.db.engine import make_engine
from tests.db.summary_support import walk


def test_every_write_keeps_the_summary_rows(db_url):
    engine = make_engine(db_url)
    walk(engine)
    engine.dispose()
