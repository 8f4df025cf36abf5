"""Bulk statements on plain rows: chunked IN (...) selects, one-statement inserts and updates, an index's
ends, and expiring the ORM objects they bypass. Every IN list of specdash is cut at CHUNK bound parameters.

Refresh and ingest move tens of thousands of rows at a time: ORM objects per row, or SQLAlchemy's
per-value type processing, would cost more than the database's own work."""

import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import (
    ARRAY,
    JSON,
    Boolean,
    ColumnElement,
    Connection,
    DateTime,
    Row,
    Select,
    Table,
    any_,
    bindparam,
    func,
    literal_column,
    select,
    text,
)
from sqlalchemy.orm import InstrumentedAttribute, Session

# Bound parameters per IN (...) list. SQLite allows 32,766 per statement (since 3.32; the test of big files
# lowers it, and CHUNK with it), PostgreSQL 65,535: this leaves room for a statement's other parameters on both.
CHUNK = 4000

# A column to select by: a mapped attribute (Benchmark.id) or any column expression.
Column = ColumnElement[Any] | InstrumentedAttribute[Any]


def chunks(values: Sequence[Any], size: int | None = None) -> Iterator[Sequence[Any]]:
    """`values` in consecutive slices of at most `size` (CHUNK, read at each call, when not given)."""
    size = size or CHUNK
    for start in range(0, len(values), size):
        yield values[start : start + size]


def index_ends(session: Session, column: Column, *where: Any) -> tuple[Any, Any]:
    """min and max of an indexed `column` over the rows `where` selects (None, None for none)."""
    first, last = session.execute(index_ends_select(column, *where)).one()
    return first, last


def index_ends_select(column: Column, *where: Any) -> Select:
    """The select of index_ends: min and max each its own scalar subquery, which SQLite answers from an end
    of the index; asked both at once (or over an IN list) it scans every entry."""
    low = select(func.min(column)).where(*where).scalar_subquery()
    high = select(func.max(column)).where(*where).scalar_subquery()
    return select(low, high)


def select_in(session: Session, query: Select, column: Column, values: Sequence[Any] | None) -> Iterator[Row]:
    """Rows of `query` with `column` in `values` (chunked), or every row when values is None: a full refresh
    reads whole tables rather than building IN lists of tens of thousands of ids. Core rows, no ORM."""
    connection = session.connection()
    if values is None:
        yield from connection.execute(query).all()
        return
    dialect_name = connection.dialect.name
    for chunk in chunks(values):
        form = in_form(dialect_name, chunk)
        in_values = _in_values_select(query, column, form)
        yield from connection.execute(in_values, {IN_VALUES: bound_values(form, chunk)}).all()


IN_VALUES = "in_values"  # the name the values of a select_in chunk are bound by
# Each query's selects of a chunk (its column in the bound values), by form, kept while the query lives: a
# query built once (the pages' reads) is not built again with each call's values, nor its cache key generated.
_IN_VALUES_SELECTS: WeakKeyDictionary[Select, dict[str, tuple[Column, Select]]] = WeakKeyDictionary()


def _in_values_select(query: Select, column: Column, form: str) -> Select:
    forms = _IN_VALUES_SELECTS.setdefault(query, {})
    kept = forms.get(form)
    if kept is not None and kept[0] is column:
        return kept[1]
    built = query.where(one_of(form, column))
    forms[form] = (column, built)
    return built


def in_form(dialect_name: str, values: Sequence[Any]) -> str:
    """How one_of binds these values, one parameter for them all where it can: "array" on PostgreSQL,
    "json" on SQLite (unless a string holds a NUL, which SQLite's JSON reading cuts short), else "list"."""
    if dialect_name == "postgresql":
        return "array"
    if dialect_name == "sqlite" and _sqlite_reads_json() and not any(_has_nul(value) for value in values):
        return "json"
    return "list"


def _has_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


@cache
def _sqlite_reads_json() -> bool:
    """Whether the sqlite3 library has its JSON functions (built in since SQLite 3.38, an option before)."""
    try:
        with closing(sqlite3.connect(":memory:")) as connection:
            connection.execute("SELECT value FROM json_each('[1]')").fetchall()
    except sqlite3.Error:
        return False
    return True


def one_of(form: str, column: Column) -> ColumnElement[bool]:
    """`column` IN the values bound as IN_VALUES (bound_values gives them for `form`, in_form chooses it).
    On PostgreSQL `column = ANY(array)`: the same plan as an IN list from one bound array (4,000 record
    keys: a third less time, client and server). On SQLite IN the elements of a JSON array (json_each),
    which SQLite reads the column's index with as it would an IN list, without the list's 4,000
    parameters rendered into each statement (the refresh reading 40,000 gaps by benchmark: 139 -> 118 ms)."""
    if form == "array":
        return column == any_(bindparam(IN_VALUES, type_=ARRAY(column.type)))
    if form == "json":
        return column.in_(select(literal_column("value")).select_from(func.json_each(bindparam(IN_VALUES))))
    return column.in_(bindparam(IN_VALUES, expanding=True))


def bound_values(form: str, values: Sequence[Any]) -> Any:
    """The value one_of's IN_VALUES parameter is bound to: the values (ints or strings) as a list, or as
    the text of their JSON array (non-ASCII as it is, shorter than its escapes)."""
    return json.dumps(list(values), ensure_ascii=False) if form == "json" else list(values)


class JsonText(str):
    """A JSON column's value already encoded (a gap's diagnoses, compared as the text stored): inserted as
    it is, where a value of any other type is encoded first."""


def json_value(value: Any) -> Any:
    """What a JSON column stores for `value`: its text."""
    return value if isinstance(value, JsonText) else json.dumps(value)


# How SQLAlchemy's SQLite dialect stores these types (JSON text, DateTime as ISO text with microseconds).
_SQLITE_CONVERTERS: dict[type, Callable[[Any], Any]] = {
    JSON: json_value,
    DateTime: lambda value: value.strftime("%Y-%m-%d %H:%M:%S.%f"),
    Boolean: int,
}


def _table(model: type) -> Table:
    table: Table = model.__table__  # type: ignore[attr-defined]
    return table


def insert_rows(session: Session, model: type, rows: list[dict[str, Any]]) -> None:
    """One executemany of `rows` (dicts with the same keys). The ORM's bulk insert splits rows by which
    values are None (thousands of statements instead of one); on SQLite the rows go to the driver as
    tuples, converted here once, since SQLAlchemy's per-value type processing costs more than SQLite's
    own insert."""
    if not rows:
        return
    connection = session.connection()
    table = _table(model)
    if connection.dialect.name == "postgresql":
        _copy_rows(connection, table, rows)
        return
    if connection.dialect.name != "sqlite":
        connection.execute(table.insert(), rows)
        return
    names = list(rows[0])
    sql = f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
    connection.exec_driver_sql(sql, sqlite_parameters(table, names, rows))


def insert_keyed(
    session: Session, model: type, rows: list[dict[str, Any]], key_columns: Sequence[str]
) -> dict[tuple[Any, ...], int]:
    """Insert `rows` with their ids left to the store, and return each row's key (its values of
    `key_columns`, a tuple) -> its new id. The ids are read back by a range of the primary key, above the
    largest before the insert, not looked up by key (300,000 record keys cost a second of a file's load):
    the caller holds the store's write lock, so no one else's rows are in that range."""
    if not rows:
        return {}
    connection = session.connection()
    table = _table(model)
    id_column = next(iter(table.primary_key))
    before = connection.scalar(select(func.max(id_column))) or 0
    insert_rows(session, model, rows)
    query = select(id_column, *(table.c[name] for name in key_columns)).where(id_column > before)
    return {tuple(added[1:]): added[0] for added in connection.execute(query)}


def reserved_ids(session: Session, model: type, count: int) -> list[int] | None:
    """On PostgreSQL, `count` new ids of `model` drawn from its id sequence, ascending, for rows inserted
    with them: nothing read back by key afterwards (a select of 1,000 record keys per batch cost 10 s of
    300,000 benchmarks), and unique whoever else writes. None on SQLite, which numbers rows as inserted."""
    connection = session.connection()
    if connection.dialect.name != "postgresql":
        return None
    drawn = text("SELECT nextval(pg_get_serial_sequence(:table, 'id')) FROM generate_series(1, :count)")
    return sorted(connection.execute(drawn, {"table": _table(model).name, "count": count}).scalars())


def _copy_rows(connection: Connection, table: Table, rows: list[dict[str, Any]]) -> None:
    """`rows` into a PostgreSQL table by COPY, the driver adapting each value (JSON columns as their
    text): one statement, where an executemany ran the INSERT once a row on the server."""
    names = list(rows[0])
    as_json = [index for index, name in enumerate(names) if isinstance(table.c[name].type, JSON)]
    raw = connection.connection.driver_connection
    assert raw is not None  # a live psycopg connection, in the session's transaction
    with raw.cursor() as cursor, cursor.copy(f"COPY {table.name} ({', '.join(names)}) FROM STDIN") as copy:
        for row in rows:
            values = list(row.values())
            for index in as_json:
                if values[index] is not None:
                    values[index] = json_value(values[index])
            copy.write_row(values)


def sqlite_parameters(table: Table, names: list[str], rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """`rows` (dicts with the keys `names`, in that order) as the tuples SQLite's driver takes, the values
    of JSON, DateTime and Boolean columns converted as SQLAlchemy would; only those columns are visited,
    and a timestamp shared by many rows (a refresh's `now`) is formatted once."""
    converting = []
    for index, name in enumerate(names):
        convert = _SQLITE_CONVERTERS.get(type(table.c[name].type))
        if convert is not None:
            converting.append(
                (index, _memoised(convert) if convert is _SQLITE_CONVERTERS[DateTime] else convert)
            )
    if not converting:
        return [tuple(row.values()) for row in rows]
    out = []
    for row in rows:
        values = list(row.values())
        for index, convert in converting:
            value = values[index]
            if value is not None:
                values[index] = convert(value)
        out.append(tuple(values))
    return out


def _memoised(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    seen: dict[Any, Any] = {}

    def converted(value: Any) -> Any:
        found = seen.get(value)
        if found is None:
            found = seen[value] = convert(value)
        return found

    return converted


def update_rows(session: Session, model: type, rows: list[dict[str, Any]], key: str = "id") -> None:
    """One executemany UPDATE ... WHERE key = ? of `rows`, each holding its `key` column and the values to
    set (Core: the ORM's bulk update costs ~50 us a row more). The rows' `key` entries are consumed."""
    if not rows:
        return
    table = _table(model)
    statement = table.update().where(table.c[key] == bindparam("row_key"))
    session.connection().execute(statement, [{"row_key": row.pop(key), **row} for row in rows])


def update_in(session: Session, model: type, ids: Sequence[int], **values: Any) -> None:
    """Set the same `values` on every row of `model` whose id is in `ids` (chunked): Core statements (the
    ORM's would fetch every matched id back to synchronise the session), then loaded objects expired."""
    table = _table(model)
    connection = session.connection()
    for chunk in chunks(ids):
        connection.execute(table.update().where(table.c.id.in_(chunk)).values(**values))
    expire_loaded(session, (model,))


def expire_loaded(session: Session, models: tuple[type, ...]) -> None:
    """Bulk statements bypass loaded objects: make those of `models` reload on next access."""
    for obj in list(session.identity_map.values()):
        if isinstance(obj, models):
            session.expire(obj)


# A write of at least this many rows refreshes PostgreSQL's statistics of what it wrote (analyze_written).
ANALYZE_ROWS = 2000


def analyze_written(session: Session, models: tuple[type, ...], rows: int) -> None:
    """Refresh PostgreSQL's planner statistics of these tables after a write of `rows` rows in this
    transaction: autovacuum sees only committed rows, so a file's own statements would be planned for the
    tables as they were before it (empty, for a first file: nested loops over tens of thousands of rows;
    one Leaderboard statement took 61 s of a 5,000-benchmark ingest). ANALYZE samples a bounded number of
    rows, its own transaction's included. SQLite plans from its indexes alone: nothing to do there."""
    if rows < ANALYZE_ROWS or session.connection().dialect.name != "postgresql":
        return
    for model in models:
        session.connection().exec_driver_sql(f"ANALYZE {_table(model).name}")
