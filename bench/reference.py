"""The reference a query figure is compared with in the same run: the SQL statements specdash sent,
recorded as it ran them, replayed on a bare `sqlite3` connection to the same file and fetched in full.
The ratio (bare time / specdash time) says how much of specdash's time is the store's own work: 1.0 is
all of it, 0.5 that specdash spends as long again around the SQL (building statements, rows, frames)."""

import contextlib
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator

from sqlalchemy import Engine, event

from specdash.db.engine import SQLITE_CACHE_KB, SQLITE_MMAP_BYTES


@contextlib.contextmanager
def recording(engine: Engine | type[Engine]) -> Iterator[list[tuple[str, object]]]:
    """Every statement and its parameters the engine (or every engine: the Engine class) sends meanwhile."""
    statements: list[tuple[str, object]] = []

    def seen(conn, cursor, statement, parameters, context, executemany):
        if not executemany and not statement.lstrip().upper().startswith(("PRAGMA", "BEGIN", "COMMIT")):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", seen)


def replay_seconds(path: str, statements: list[tuple[str, object]], repeat: int = 3) -> float:
    """CPU seconds (median of `repeat`) to run and fetch `statements` on one bare sqlite3 connection,
    warmed by one run first (as the dashboard's pooled connections are)."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    # the page cache and memory map specdash's engine sets on its connections: like for like
    connection.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KB}")
    connection.execute(f"PRAGMA mmap_size={SQLITE_MMAP_BYTES}")

    def once() -> float:
        start = time.process_time()
        for statement, parameters in statements:
            connection.execute(statement, parameters or ()).fetchall()
        return time.process_time() - start

    once()
    seconds = statistics.median(once() for _ in range(repeat))
    connection.close()
    return seconds


def cpu_seconds(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start
