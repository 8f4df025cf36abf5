"""One engine factory for every part of specdash, with SQLite set up for concurrent readers and writers."""

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import Session

SQLITE_BUSY_TIMEOUT_MS = 30_000
SQLITE_CACHE_KB = 64 * 1024
SQLITE_MMAP_BYTES = 256 * 1024 * 1024
WRITE_OPTION = "specdash_write"


def _sqlite_connect(dbapi_connection, _record) -> None:
    # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's implicit BEGIN cannot be IMMEDIATE).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA synchronous=NORMAL")
    # Reads dominate the dashboard: keep the hot tables in this connection's cache and read the file
    # through a memory map instead of a read() call per page.
    cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KB}")
    cursor.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
    cursor.close()


def _sqlite_begin(connection) -> None:
    # A writer takes the write lock up front, so two writers queue on busy_timeout instead of one
    # failing with "database is locked" when it upgrades a read transaction.
    immediate = connection.get_execution_options().get(WRITE_OPTION)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, pool_pre_ping=True)


@contextmanager
def transaction(engine: Engine, write: bool = True) -> Iterator[Session]:
    """A session whose work is committed together, or not at all."""
    bind = engine.execution_options(**{WRITE_OPTION: True}) if write else engine
    with Session(bind, expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def reading(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session:
        yield session
