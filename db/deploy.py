"""The deploy answer: for every deployment and load, the checkpoint to serve (the Leaderboard's winner by
measured speedup), its setting, measured against predicted speedup with the band, and its open alerts."""

import pandas as pd
from sqlalchemy.orm import Session

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
    low = best["predicted_speedup"] * (1 - best["error_band"])
    high = best["predicted_speedup"] * (1 + best["error_band"])
    inside = (best["measured_speedup"] >= low) & (best["measured_speedup"] <= high)
    best["within_band"] = inside.where(best["error_band"].notna() & best["predicted_speedup"].notna())
    best["target_model"] = best["target_model"].fillna("-")
    best = best.sort_values(["target_model", "deployment", "concurrency"], kind="stable")
    return best[DEPLOY_COLUMNS].reset_index(drop=True)
