"""The DataFrames the pages draw, built from the store's typed rows in one place."""

from collections.abc import Iterable
from typing import Any

import pandas as pd


def frame(rows: Iterable[tuple], row_type: Any) -> pd.DataFrame:
    """The rows as a DataFrame with the row type's fields as columns (there even when no row is)."""
    return pd.DataFrame.from_records(list(rows), columns=list(row_type._fields))
