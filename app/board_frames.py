"""The Leaderboard's entries and the deploy answer's choices as the pages read them: counts and the
setting as nullable integers, speedups as floats (`-` on a page, never `None`)."""

import pandas as pd

from specdash.app.frames import frame
from specdash.db.deploy import DeployChoice
from specdash.db.leaderboard import RankedEntry
from specdash.db.leaderboard_ranking import NUMBERS

INTEGER_COLUMNS = (
    "concurrency",
    "benchmarks",
    "open_alerts",
    "datasets",
    "num_steps",
    "topk",
    "num_draft_tokens",
)


def board_frame(entries: list[RankedEntry]) -> pd.DataFrame:
    """Leaderboard entries as a frame, typed."""
    return _typed(frame(entries, RankedEntry), [*NUMBERS, "gap"])


def choices_frame(choices: list[DeployChoice]) -> pd.DataFrame:
    """Deploy choices as a frame, typed."""
    numbers = [
        "measured_speedup",
        "predicted_speedup",
        "error_band",
        "gap",
        "measured_tps",
        "runner_up_speedup",
    ]
    table = _typed(frame(choices, DeployChoice), numbers)
    return table.astype({"candidates": "Int64"})


def _typed(table: pd.DataFrame, numbers: list[str]) -> pd.DataFrame:
    columns = set(table.columns)
    types = {name: "float64" for name in numbers} | {n: "Int64" for n in INTEGER_COLUMNS if n in columns}
    return table.astype(types)
