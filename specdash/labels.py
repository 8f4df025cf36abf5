"""How a speculation setting and a gap are written, the same on every page and in every command."""

import math

from specdash.costmodel.domain import Setting


def _missing(value) -> bool:
    """None, NaN, or pandas' NA (a nullable integer column's missing value, as in a table's row)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return True
    try:
        return bool(value != value)
    except TypeError:  # pandas' NA is neither equal nor unequal to itself
        return True


def setting_label(row) -> str:
    """`EAGLE3 3/1/4`: algorithm, draft steps / top-k / draft tokens; `no speculation` for a baseline.
    `row` is anything indexable by column name (a dict, a pandas row); the label is the Setting's."""
    return Setting.from_row(row).label


def gap_text(gap: float | None) -> str:
    """`+48.9%` (slower than predicted) or `-3.0%` (faster)."""
    return "-" if _missing(gap) else f"{gap:+.1%}"
