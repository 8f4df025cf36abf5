"""Typed rows read straight from a query: each row a NamedTuple made from the connection's plain tuples."""

from collections.abc import Mapping
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Select
from sqlalchemy.orm import Session

RowT = TypeVar("RowT", bound=NamedTuple)


def rows_of(
    session: Session, query: Select, row_type: type[RowT], parameters: Mapping[str, Any] | None = None
) -> list[RowT]:
    """The query's rows as `row_type`, whose fields must be the query's labels in order (checked once, so a
    column added to one and not the other fails loudly): made with _make from the connection's rows, no
    ORM object nor mapping per row. `parameters`: values of the query's bound parameters."""
    result = session.connection().execute(query, parameters)
    labels = tuple(result.keys())
    if labels != row_type._fields:
        raise TypeError(f"{row_type.__name__} has fields {row_type._fields}, the query labels {labels}")
    make: Any = row_type._make
    return list(map(make, result))


def driver_rows(session: Session, query: Select, parameters: Mapping[str, Any] | None = None) -> list[tuple]:
    """The query's rows as plain tuples, for a query of numbers and text only. On SQLite they are the
    driver's own tuples, fetched at once: SQLAlchemy converts none of these types there, and a Row made
    per row and turned back into a tuple cost a third of the parity plot's Python time. Elsewhere each row
    goes through SQLAlchemy's conversions as usual."""
    result = session.connection().execute(query, parameters)
    if result.dialect.name == "sqlite":
        rows = list(result.cursor.fetchall())
        result.close()
        return rows
    return [tuple(row) for row in result]
