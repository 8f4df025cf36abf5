"""Tables as every page shows them: a header in words with its unit, numbers rounded for reading, a dash for
a value that is not there (never `None`), names wide enough to read, and rows enough before it scrolls. One
home, so that no page shows a raw column name or four decimals."""

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

MISSING = "-"  # as text.number_text writes a missing number
MISSING_LEGEND = f"{MISSING}: none stated or measured"
ROW_PX = 35
HEADER_PX = 38
VISIBLE_ROWS = 16  # then the table scrolls (a page with more has its own page control)
NAME_WIDTH = 400  # px: `lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge` reads whole
CHAR_PX = 8  # a character of the grid's 14 px font, generously

# Column names the stores use, as a reader says them (with the unit).
HEADERS = {
    "accept_length": "τ (accept length)",
    "measured_accept_length": "measured τ",
    "predicted_accept_length": "predicted τ",
    "measured_tps": "measured tok/s",
    "predicted_tps": "predicted tok/s",
    "decode_tps": "decode tok/s",
    "aggregate_tps": "aggregate tok/s",
    "baseline_tps": "baseline tok/s",
    "round_ms": "round ms",
    "predicted_round_ms": "predicted round ms",
    "num_steps": "steps K",
    "topk": "top-k",
    "num_draft_tokens": "draft tokens",
    "concurrency": "load (concurrency)",
    "ttt_length": "TTT length",
    "target_model": "target",
    "gap": "gap (%)",
    "gap_id": "gap #",
    "alert_id": "alert #",
    "benchmark_id": "benchmark #",
    "checkpoint_id": "checkpoint #",
    "id": "#",
    "created_at": "created (UTC)",
    "ingested_at": "ingested (UTC)",
    "at": "at (UTC)",
    "is_alert": "alert",
    "is_active": "active",
    "comm_fraction": "all-reduce share",
    "draft_step_ms": "draft ms/step",
    "round_overhead_ms": "overhead ms/round",
    "verify_growth_compute": "verify growth (compute)",
    "verify_growth_comm": "verify growth (all-reduce)",
    "acc_to_acceptance": "acc to acceptance",
    "num_gpus": "GPUs",
    "tp_size": "TP",
    "gpu": "GPU",
    "size_bytes": "bytes",
    "draft_branch_ms": "draft ms/branch",
    "verify_growth": "verify growth",
    "context": "in/out tokens",
}
_WORDS = {"tps": "tok/s", "pct": "%", "id": "#", "tau": "τ", "num": "", "is": ""}
# Name-like columns: wide, pinned to the left when first, so a long drafter name is not cut to its org.
_NAMES = re.compile(r"^(run|drafter|deployment|name|checkpoint|path|file|target|target_model|group)$")
_SIMPLE = (str, int, float, bool)


def header(column: str) -> str:
    """`predicted_accept_length` -> `predicted τ`, `p90_round_ms` -> `p90 round ms`, `is_alert` -> `alert`."""
    if column in HEADERS:
        return HEADERS[column]
    if "_" not in column:
        return column
    words = [_WORDS.get(w, w) for w in column.split("_")]
    return " ".join(w for w in words if w) or column


def context_labels(pairs: Sequence[tuple[Any, Any]]) -> list[str] | None:
    """Each row's context, mean input / output tokens per request (`8,192 / 512`, a dash for a side not
    stated), for a table whose rows differ in it; None when every row has the same (nothing to tell)."""

    def plain(
        value: Any,
    ) -> float | None:  # NaN (a frame's missing value) is None, so that all-missing is equal
        return None if value is None or value != value else float(value)

    told = [(plain(i), plain(o)) for i, o in pairs]
    if len(set(told)) <= 1:
        return None
    return [" / ".join(MISSING if v is None else f"{v:,.0f}" for v in pair) for pair in told]


def number_format(values: pd.Series) -> str | None:
    """A printf format for a numeric column: whole numbers as they are, else a decimal or two by size."""
    numbers = pd.to_numeric(values, errors="coerce").dropna()
    if numbers.empty or pd.api.types.is_bool_dtype(values):
        return None
    if (numbers == numbers.round()).all():
        return None if pd.api.types.is_integer_dtype(values) else "%d"  # counts stored beside NaN are floats
    biggest = numbers.abs().max()
    return "%.1f" if biggest >= 100 else "%.2f" if biggest >= 0.1 or biggest == 0 else "%.3f"


def column_config(frame: pd.DataFrame, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Each column's config: what the page gave (a label, or a st.column_config object) completed with a
    header in words, a number format and a width for names; a None in `given` hides the column."""
    given = dict(given or {})
    config: dict[str, Any] = {}
    for column in frame.columns:
        name = str(column)
        spec = given.get(name, {})
        if spec is None:
            config[name] = None
            continue
        if isinstance(spec, str):
            spec = {"label": spec}
        spec = dict(spec)
        spec.setdefault("label", header(name))
        spec["label"] = spec["label"] or header(name)
        values = frame[column]
        typed = spec.get("type_config") or {}
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if numeric and typed.get("type") in (None, "number") and not typed.get("format"):
            fmt = number_format(values)
            if fmt:
                spec["type_config"] = {**typed, "type": "number", "format": fmt}
        textual = pd.api.types.is_string_dtype(values) or pd.api.types.is_object_dtype(values)
        if spec.get("width") is None and textual and len(values):
            spec["width"] = text_width(values, str(spec["label"]), wide=bool(_NAMES.match(name)))
        config[name] = spec
    return config


def text_width(values: pd.Series, label: str, wide: bool = False) -> int | None:
    """Pixels a text column needs for its longest value (and header), up to NAME_WIDTH for names (a wider
    table scrolls sideways rather than cut names) and 240 for other text; None leaves it to the grid."""
    lengths = values.dropna().astype(str).str.len()
    longest = max(int(lengths.max()) if len(lengths) else 0, len(label))
    if longest <= 12:
        return None
    return min(CHAR_PX * longest + 24, NAME_WIDTH if wide else 240)


def height(rows: int, visible: int = VISIBLE_ROWS) -> int:
    """Pixels for `rows` rows up to `visible` of them (the rest scroll), never a half-empty frame."""
    return HEADER_PX + ROW_PX * max(1, min(rows, visible)) + 2


def _options(
    frame: pd.DataFrame, columns: Mapping[str, Any] | None, rows: int | None, options: dict[str, Any]
) -> dict[str, Any]:
    # a page's column_config= is the same as `columns` (the call reads like st.dataframe's)
    columns = {**(columns or {}), **(options.pop("column_config", None) or {})}
    return {
        "hide_index": True,
        "width": "stretch",
        "height": height(len(frame), rows or VISIBLE_ROWS),
        "column_config": column_config(frame, columns),
        "placeholder": MISSING,
    }


def show(
    frame: pd.DataFrame, columns: Mapping[str, Any] | None = None, *, rows: int | None = None, **options
):
    """st.dataframe of the frame as every page shows tables; `columns` gives labels or st.column_config
    objects for some columns (the rest get headers in words), `rows` how many show before it scrolls;
    `options` pass on (key, on_select, ...). Returns what st.dataframe returns (its selection)."""
    return st.dataframe(frame, **(_options(frame, columns, rows, options) | options))


def edit(
    frame: pd.DataFrame, columns: Mapping[str, Any] | None = None, *, rows: int | None = None, **options
) -> pd.DataFrame:
    """st.data_editor of the frame with the same headers, formats and dashes as `show`."""
    return st.data_editor(frame, **(_options(frame, columns, rows, options) | options))
