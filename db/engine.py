"""One engine factory for every part of specdash, with SQLite set up for concurrent readers and writers.

Writers queue for SQLite's write lock: one that has to wait says so (once) and waits up to
$SPECDASH_LOCK_TIMEOUT seconds, then fails with StoreBusy instead of "database is locked"."""

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session

from specdash.masking import masked_url

SQLITE_BUSY_TIMEOUT_MS = 30_000
LOCK_TIMEOUT_ENV = "SPECDASH_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT_S = 300.0
# How long a writer waits quietly before it says it is waiting for another.
LOCK_NOTICE_MS = 500
PG_CONNECT_TIMEOUT_S = 10
SQLITE_CACHE_KB = 64 * 1024
SQLITE_MMAP_BYTES = 256 * 1024 * 1024
# A file's write transaction keeps a smaller page cache: its dirty pages spill to the WAL instead of staying
# resident (a 100,000-benchmark file: 287 -> 229 MB peak, the same CPU), and a sort's memory follows it.
SQLITE_FILE_CACHE_KB = 16 * 1024
# The page cache while a statement of many sorts runs (bounded_sorts): SQLite's own default.
SQLITE_SORT_CACHE_KB = 2000
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


SUPPORTED_BACKENDS = ("sqlite", "postgresql")
URL_HELP = "give --db (or $SPECDASH_DB_URL) as sqlite:///PATH or postgresql://USER@HOST[:PORT]/DATABASE"


class BadDatabaseURL(ValueError):
    """A database URL specdash cannot use; the message is one line and shows no password."""


def check_db_url(url: str) -> None:
    """Raise BadDatabaseURL unless `url` names a SQLite or PostgreSQL database with a numeric port."""
    shown = masked_url(url)
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise BadDatabaseURL(f"{shown} is not a database URL: {URL_HELP}") from None
    except ValueError:  # SQLAlchemy reads the port with int()
        raise BadDatabaseURL(f"{shown}: the port is not a number: {URL_HELP}") from None
    backend = parsed.get_backend_name()
    if backend not in SUPPORTED_BACKENDS:
        raise BadDatabaseURL(f"{shown}: {backend!r} databases are not supported: {URL_HELP}")


class StoreBusy(Exception):
    """Another writer held the write lock for longer than this one may wait."""


def lock_timeout_s() -> float:
    value = os.environ.get(LOCK_TIMEOUT_ENV)
    try:
        return max(0.0, float(value)) if value else DEFAULT_LOCK_TIMEOUT_S
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT_S


def _log_wait(message: str) -> None:
    logging.getLogger("specdash").warning(message)


def _is_locked(exc: OperationalError) -> bool:
    text = str(exc.orig)
    return "database is locked" in text or "database is busy" in text


def _sqlite_begin(connection, notice: Callable[[str], None], timeout_s: float | None) -> None:
    # A writer takes the write lock up front, so two writers queue instead of one failing with
    # "database is locked" when it upgrades a read transaction.
    if not connection.get_execution_options().get(WRITE_OPTION):
        connection.exec_driver_sql("BEGIN")
        return
    timeout_s = lock_timeout_s() if timeout_s is None else timeout_s
    raw = connection.connection.driver_connection
    raw.execute(f"PRAGMA busy_timeout={int(min(LOCK_NOTICE_MS, timeout_s * 1000))}")
    try:
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except OperationalError as exc:
            if not _is_locked(exc):
                raise
            if timeout_s * 1000 <= LOCK_NOTICE_MS:
                raise _busy(timeout_s) from None
        notice(
            f"waiting for another writer to finish (up to {timeout_s:g} s; set {LOCK_TIMEOUT_ENV} to change)"
        )
        raw.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000 - LOCK_NOTICE_MS)}")
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
        except OperationalError as exc:
            if not _is_locked(exc):
                raise
            raise _busy(timeout_s) from None
    finally:
        raw.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")


def _busy(timeout_s: float) -> StoreBusy:
    return StoreBusy(
        f"another writer held the database's write lock for more than {timeout_s:g} s; nothing was written. "
        f"Try again when it has finished, or wait longer with {LOCK_TIMEOUT_ENV}=SECONDS"
    )


def make_engine(
    url: str,
    on_lock_wait: Callable[[str], None] | None = None,
    lock_timeout: float | None = None,
    read_only: bool = False,
) -> Engine:
    """on_lock_wait(message) is told when a write has to wait for another writer's lock; a read-only engine
    is refused every write by the database itself (SQLite's query_only, PostgreSQL's read-only transactions).
    A URL it cannot use (another database, a bad port, not a URL) raises BadDatabaseURL."""
    check_db_url(url)
    if url.startswith("sqlite"):
        engine = _create(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000})
        event.listen(engine, "connect", _sqlite_connect)
        if read_only:
            event.listen(engine, "connect", lambda dbapi, _: dbapi.execute("PRAGMA query_only=ON"))
        event.listen(
            engine, "begin", partial(_sqlite_begin, notice=on_lock_wait or _log_wait, timeout_s=lock_timeout)
        )
        return engine
    connect_args: dict[str, Any] = {}
    if url.startswith("postgresql"):
        connect_args = {"connect_timeout": PG_CONNECT_TIMEOUT_S}
        if read_only:
            connect_args["options"] = "-c default_transaction_read_only=on"
        if make_url(url).get_driver_name() == "psycopg":
            # A plan cached while a table was small (an ingest's first statements see a table with no
            # statistics) would be reused as it grows: psycopg prepares a statement after 5 runs, and the
            # generic plan of the duplicate check was a sequential scan, 2 s a batch at 300,000 benchmarks.
            # Nothing is prepared, so each statement is planned for the table as it is; the server keeps
            # caching the plans of its own foreign-key checks (planning each one again, as
            # plan_cache_mode=force_custom_plan did, cost ~60 % of their time: 1.7 s of 4.1 s over 300,000).
            connect_args["prepare_threshold"] = None
    return _create(url, pool_pre_ping=True, connect_args=connect_args)


def _create(url: str, **options: Any) -> Engine:
    try:
        return create_engine(url, **options)
    except (NoSuchModuleError, ImportError) as exc:  # a driver that is not installed
        raise BadDatabaseURL(f"{masked_url(url)}: no database driver for it ({exc}): {URL_HELP}") from None
    except ArgumentError as exc:  # a URL its dialect refuses (SQLite's forms)
        first = masked_url(str(exc).strip().splitlines()[0])
        raise BadDatabaseURL(f"{first}: {URL_HELP}") from None


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


@contextmanager
def file_transaction(engine: Engine, bulk_points: bool = False) -> Iterator[Session]:
    """The write transaction of one file. On SQLite it reads the store without the memory map: a file's
    transaction touches most of the pages it writes again (ids, predictions, gaps), and each page read
    through the map stays resident in this process (a 300,000-benchmark file peaked at 469 MB), while the
    page cache is bounded, and smaller than a reader's (SQLITE_FILE_CACHE_KB). For a training-metrics file,
    foreign-key enforcement is off for its duration: every point references a run and keys this same transaction created or read, and a per-row check
    would cost as much as the insert itself."""
    if engine.dialect.name != "sqlite":
        with transaction(engine) as session:
            yield session
        return
    with engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert raw is not None  # a live SQLite connection
        # set before BEGIN: the map's size and foreign keys only take effect outside a transaction
        raw.execute("PRAGMA mmap_size=0")
        raw.execute(f"PRAGMA cache_size=-{SQLITE_FILE_CACHE_KB}")
        if bulk_points:
            raw.execute("PRAGMA foreign_keys=OFF")
        try:
            bind = connection.execution_options(**{WRITE_OPTION: True})
            with Session(bind, expire_on_commit=False) as session, session.begin():
                yield session
        finally:
            raw.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")
            raw.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KB}")
            if bulk_points:
                raw.execute("PRAGMA foreign_keys=ON")


@contextmanager
def bounded_sorts(session: Session) -> Iterator[None]:
    """Statements run within this sort in little memory on SQLite. Each sort of a statement (GROUP BY,
    ORDER BY, a window) holds up to the page cache's size before it spills, and a statement of several
    holds them at once: the Leaderboard's entries after a 300,000-benchmark file took 155 MB over the
    file transaction's 16 MB cache, 47 MB over SQLite's default 2 MB, in the same CPU time. The page
    cache is that default for their duration."""
    if session.get_bind().dialect.name != "sqlite":
        yield
        return
    raw = session.connection().connection.driver_connection
    assert raw is not None  # a live SQLite connection
    (size,) = raw.execute("PRAGMA cache_size").fetchone()
    raw.execute(f"PRAGMA cache_size=-{SQLITE_SORT_CACHE_KB}")
    try:
        yield
    finally:
        raw.execute(f"PRAGMA cache_size={size}")
