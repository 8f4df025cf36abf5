"""A file's write transaction on SQLite keeps a smaller page cache than a reader's (db/engine.py
file_transaction): its dirty pages spill to the WAL instead of growing the ingest's memory."""

from specdash.db.engine import (
    SQLITE_CACHE_KB,
    SQLITE_FILE_CACHE_KB,
    SQLITE_SORT_CACHE_KB,
    bounded_sorts,
    file_transaction,
    make_engine,
)
from specdash.db.schema import upgrade


def test_a_file_transaction_keeps_a_smaller_page_cache_and_gives_the_reader_its_own_back(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'cache.db'}")
    upgrade(engine)
    assert SQLITE_FILE_CACHE_KB < SQLITE_CACHE_KB
    for bulk_points in (False, True):
        with file_transaction(engine, bulk_points) as session:
            assert session.connection().exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_FILE_CACHE_KB
        with engine.connect() as connection:  # the pooled connection the transaction used
            assert connection.exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_CACHE_KB
    engine.dispose()


def test_statements_of_many_sorts_run_in_a_small_cache_and_give_the_transaction_its_own_back(tmp_path):
    """SQLite lets each sort hold as much as the page cache: the Leaderboard's statements after a big
    file run within bounded_sorts, in SQLite's default cache, and the file's cache is back after."""
    engine = make_engine(f"sqlite:///{tmp_path / 'sorts.db'}")
    upgrade(engine)
    assert SQLITE_SORT_CACHE_KB < SQLITE_FILE_CACHE_KB
    with file_transaction(engine) as session:
        with bounded_sorts(session):
            assert session.connection().exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_SORT_CACHE_KB
        assert session.connection().exec_driver_sql("PRAGMA cache_size").scalar() == -SQLITE_FILE_CACHE_KB
    engine.dispose()
