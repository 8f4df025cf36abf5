"""The deploy answer: for every deployment and load, the checkpoint to serve (the Leaderboard's winner by
measured speedup), its setting, measured against predicted speedup with the band, and its open alerts."""

from dataclasses import replace

import pandas as pd
from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.db.leaderboard import LeaderboardFilter, winners

DEPLOY_COLUMNS = [
    "target_model",
    "deployment",
    "concurrency",
    "run",
    "checkpoint",
    "speculative_algorithm",
    "num_steps",
    "topk",
    "num_draft_tokens",
    "measured_speedup",
    "predicted_speedup",
    "error_band",
    "within_band",
    "gap",
    "measured_tps",
    "candidates",
    "runner_up_speedup",
    "open_alerts",
    "checkpoint_id",
    "deployment_id",
]


def deploy_table(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
    """One row per (deployment, load): the entry with the highest measured speedup there (ties: the
    leaderboard's order), how many checkpoints competed and the runner-up's speedup; `within_band` says
    whether measured lies inside predicted ± the prediction's band (None without a prediction or band).
    Ordered by target model, deployment and load. Only the winners leave the store."""
    best = winners(session, flt)
    if best.empty:
        return pd.DataFrame(columns=DEPLOY_COLUMNS)
    best["candidates"] = best["candidates"].astype("Int64")
    best["within_band"] = within_band(best)
    best["target_model"] = best["target_model"].fillna("-")
    best = best.sort_values(["target_model", "deployment", "concurrency"], kind="stable")
    return best[DEPLOY_COLUMNS].reset_index(drop=True)


def within_band(rows: pd.DataFrame) -> pd.Series:
    """Whether measured lies inside predicted ± the band (None without a prediction or band)."""
    low = rows["predicted_speedup"] * (1 - rows["error_band"])
    high = rows["predicted_speedup"] * (1 + rows["error_band"])
    inside = (rows["measured_speedup"] >= low) & (rows["measured_speedup"] <= high)
    return inside.where(rows["error_band"].notna() & rows["predicted_speedup"].notna())


# what identifies a winner: its place and its entry
ENTRY = ["deployment_id", "concurrency", "checkpoint_id", "speculative_algorithm", "num_steps", "topk"]


def deploy_view(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
    """deploy_table with `prediction_source`: a winner the chosen source does not predict (a deployment left
    uncalibrated) is compared with its theory prediction instead, so "no prediction" means none exists."""
    best = deploy_table(session, flt).assign(prediction_source=flt.source)
    missing = best["predicted_speedup"].isna()
    if flt.source == PredictionSource.THEORY or not missing.any():
        return best
    theory = deploy_table(session, replace(flt, source=PredictionSource.THEORY))
    keys = [*ENTRY, "num_draft_tokens"]
    found = best[keys].merge(theory[[*keys, "predicted_speedup", "error_band"]], on=keys, how="left")
    found.index = best.index
    fill = missing & found["predicted_speedup"].notna()
    best.loc[fill, ["predicted_speedup", "error_band"]] = found.loc[fill, ["predicted_speedup", "error_band"]]
    best.loc[fill, "prediction_source"] = PredictionSource.THEORY.value
    best["within_band"] = within_band(best)
    return best
