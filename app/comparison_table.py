"""The Checkpoints page's comparison as one row per checkpoint: measured beside each source's prediction."""

import pandas as pd

from specdash.db.models import BUILTIN_SOURCES


def comparison_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per checkpoint: measured tok/s, then per prediction source its predicted tok/s and the gap
    (1 - measured / predicted), then the accept lengths; the CSV download and the page's table."""
    keys = ["run", "checkpoint", "step", "n", "measured_tps", "measured_tps_std"]
    table = frame.drop_duplicates(["run", "checkpoint"]).reset_index(drop=True)
    out = table[keys].copy()
    sources = sorted(frame["source"].dropna().unique(), key=lambda s: (s not in BUILTIN_SOURCES, s))
    by_source = {
        s: g.set_index(["run", "checkpoint"]) for s, g in frame.dropna(subset=["source"]).groupby("source")
    }
    index = list(zip(table["run"], table["checkpoint"], strict=True))
    for source in sources:
        values = by_source[source]
        predicted = pd.Series([values["predicted_tps"].get(i) for i in index], dtype="float64")
        out[f"predicted_tps_{source}"] = predicted
        out[f"gap_{source}"] = 1 - out["measured_tps"].astype("float64") / predicted
    out["measured_accept_length"] = table["measured_accept_length"]
    out["measured_accept_length_std"] = table["measured_accept_length_std"]
    for source in sources:
        values = by_source[source]
        out[f"predicted_accept_length_{source}"] = pd.Series(
            [values["predicted_accept_length"].get(i) for i in index], dtype="float64"
        )
    return out
