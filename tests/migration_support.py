"""What the migration tests share: a database filled at an older revision with the rows of a newer one
its tables can hold, and the tables and rows of a database file as they are."""

import sqlite3
from pathlib import Path

from sqlalchemy import Engine

from specdash.db.engine import make_engine
from specdash.db.schema import revision_history, upgrade
from tests.conftest import sqlite_url


def copied_store(url: str, path: Path) -> Engine:
    """An engine on a copy, at `path`, of the SQLite store at `url` (a template the test must not change)."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as src, sqlite3.connect(path) as dst:
        src.backup(dst)
    return make_engine(sqlite_url(path))


def tables(path: Path) -> dict[str, list[str]]:
    with sqlite3.connect(path) as con:
        names = [
            row[0]
            for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            if row[0] != "alembic_version" and not row[0].startswith("sqlite_")
        ]
        return {name: [col[1] for col in con.execute(f"PRAGMA table_info({name})")] for name in names}


def all_rows(path: Path, skip: tuple[str, ...] = (), skip_columns: dict[str, tuple[str, ...]] | None = None):
    """Every table's rows (but the tables `skip`, and the columns `skip_columns` names per table) as sorted
    reprs: what an upgrade must keep."""
    found = {}
    with sqlite3.connect(path) as con:
        for name, columns in tables(path).items():
            if name in skip:
                continue
            kept = [c for c in columns if c not in (skip_columns or {}).get(name, ())]
            found[name] = sorted(map(repr, con.execute(f'SELECT {", ".join(kept)} FROM "{name}"')))
    return found


def table_rows(path: Path, table: str, columns: list[str]) -> set[tuple]:
    with sqlite3.connect(path) as con:
        return set(con.execute(f"SELECT {', '.join(columns)} FROM {table}"))


DROPPED_LATER = {"gap": {"status": "open"}}


# Unstated profile costs: NULL since revision 0007, 0 (the ingest default) before; 0007 maps one to the other.
UNSTATED_COSTS = {
    table: (
        "comm_fraction",
        "draft_step_ms",
        "round_overhead_ms",
        "verify_growth_compute",
        "verify_growth_comm",
    )
    for table in ("deployment", "parameter_set")
}


def as_before_0007(table: str, columns: list[str], rows: set[tuple]) -> set[tuple]:
    costs = [i for i, c in enumerate(columns) if c in UNSTATED_COSTS.get(table, ())]
    return {tuple(0.0 if i in costs and v is None else v for i, v in enumerate(row)) for row in rows}


def fill_at(revision: str, source: Path, target: Path) -> dict[str, set[tuple]]:
    """Create a database at `revision` and copy into it every row of `source` that its tables can hold;
    return what was written, table by table, in the columns that revision has."""
    engine = make_engine(sqlite_url(target))
    upgrade(engine, revision)
    engine.dispose()
    at_revision, at_head = tables(target), tables(source)
    written = {}
    with sqlite3.connect(target) as con:
        con.execute("PRAGMA foreign_keys=OFF")
        for table, columns in at_revision.items():
            shared = [c for c in columns if c in at_head.get(table, [])]
            rows = table_rows(source, table, shared) if shared else set()
            if revision_history().index(revision) < revision_history().index("0007"):
                rows = as_before_0007(table, shared, rows)
            fill = {c: v for c, v in DROPPED_LATER.get(table, {}).items() if c in columns}
            names = [*shared, *fill]
            if not shared:  # a table the head no longer has (gap_event became alert_event in 0008)
                continue
            marks = ", ".join("?" for _ in names)
            con.executemany(
                f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
                [(*row, *fill.values()) for row in rows],
            )
            written[table] = (shared, rows)
    return written
