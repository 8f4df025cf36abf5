"""DataFrames built from the store's typed rows: the one place app/ turns rows into tables and charts."""

from collections.abc import Iterable
from dataclasses import fields, is_dataclass

import pandas as pd


def columns_of(row_type: type) -> list[str]:
    """A row type's field names, in order (a NamedTuple's or a dataclass's)."""
    if is_dataclass(row_type):
        return [field.name for field in fields(row_type)]
    return list(row_type._fields)  # type: ignore[attr-defined]


def frame(rows: Iterable, row_type: type) -> pd.DataFrame:
    """The rows as a DataFrame with the row type's fields as columns (there even when no row is)."""
    columns = columns_of(row_type)
    if is_dataclass(row_type):
        rows = [tuple(getattr(row, name) for name in columns) for row in rows]
    return pd.DataFrame.from_records(list(rows), columns=columns)
