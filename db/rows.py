"""Typed rows read straight from a query: each row a NamedTuple made from the connection's plain tuples."""

from typing import Any, NamedTuple, TypeVar

from sqlalchemy import Select
from sqlalchemy.orm import Session

RowT = TypeVar("RowT", bound=NamedTuple)


def rows_of(session: Session, query: Select, row_type: type[RowT]) -> list[RowT]:
    """The query's rows as `row_type`, whose fields must be the query's labels in order (checked once, so a
    column added to one and not the other fails loudly): made with _make from the connection's rows, no
    ORM object nor mapping per row."""
    result = session.connection().execute(query)
    labels = tuple(result.keys())
    if labels != row_type._fields:
        raise TypeError(f"{row_type.__name__} has fields {row_type._fields}, the query labels {labels}")
    make: Any = row_type._make
    return list(map(make, result))
