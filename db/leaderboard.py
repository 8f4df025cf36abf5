"""The Leaderboard's queries: checkpoints ranked by measured speedup over no speculation (and by predicted,
with the gap) per deployment and load, on one dataset or across datasets, each at its best setting."""

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.db.leaderboard_sql import NUMBERS, SETTING, board_select
from specdash.db.models import Benchmark, Deployment
from specdash.db.parameters import load_baselines
from specdash.db.queries import frame_of

COLUMNS = [
    "rank",
    "run",
    "checkpoint",
    "deployment",
    "concurrency",
    *SETTING,
    "measured_speedup",
    "predicted_speedup",
    "gap",
    "error_band",
    "measured_tps",
    "predicted_tps",
    "baseline_tps",
    "datasets",
    "benchmarks",
    "open_alerts",
    "checkpoint_id",
    "deployment_id",
    "target_model",  # the run's: the deploy answer groups by it
]


INTEGER_COLUMNS = (
    "concurrency",
    "benchmarks",
    "open_alerts",
    "datasets",
    "num_steps",
    "topk",
    "num_draft_tokens",
)


@dataclass(frozen=True)
class LeaderboardFilter:
    """Which benchmarks compete: a deployment (None: every one), a load (concurrency; None: every level),
    a dataset (None: across datasets), and the prediction source compared with."""

    deployment_id: int | None = None
    concurrency: int | None = None
    dataset: str | None = None
    source: str = "theory"
    rank_by: str = "measured"  # measured | predicted


def leaderboard_choices(session: Session) -> dict:
    """Deployments with checkpoint benchmarks (most benchmarks first), their loads, and the datasets."""
    benched = (
        Benchmark.checkpoint_id.is_not(None),
        Benchmark.speculative_algorithm.is_not(None),
        Benchmark.superseded_by_id.is_(None),
    )
    deployments = session.execute(
        select(Deployment.id, Deployment.name, func.count(Benchmark.id))
        .join(Benchmark, Benchmark.deployment_id == Deployment.id)
        .where(*benched)
        .group_by(Deployment.id, Deployment.name)
        .order_by(func.count(Benchmark.id).desc(), Deployment.name)
    ).all()
    loads: dict[int, list[int]] = {}
    for deployment_id, concurrency in session.execute(
        select(Benchmark.deployment_id, Benchmark.concurrency)
        .where(*benched)
        .distinct()
        .order_by(Benchmark.deployment_id, Benchmark.concurrency)
    ):
        loads.setdefault(deployment_id, []).append(concurrency)
    datasets = sorted(
        d for d in session.scalars(select(Benchmark.dataset).where(*benched).distinct()) if d is not None
    )
    return {
        "deployments": [(i, name) for i, name, _ in deployments],
        "loads": loads,
        "datasets": datasets,
    }


def leaderboard(session: Session, flt: LeaderboardFilter) -> pd.DataFrame:
    """One row per (checkpoint, deployment, load) at its best speculation setting, ranked in the store.

    Speedup = tok/s / the no-speculation baseline of the same deployment, load and dataset (the measured
    median when there is one, else the prediction's or the profile's baseline), so datasets whose baselines
    differ 2x compare fairly. On one dataset a setting's speedup is the mean over repeated benchmarks; across
    datasets it is the mean of its per-dataset speedups (`datasets` says how many). The best setting is the
    one with the highest speedup by `rank_by`; `gap` = 1 - measured / predicted speedup at that setting."""
    rows = frame_of(session, board_select(flt, load_baselines(session, flt.deployment_id)))
    if rows.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows.insert(0, "rank", range(1, len(rows) + 1))
    return _board_frame(rows)[COLUMNS]


def _board_frame(rows: pd.DataFrame) -> pd.DataFrame:
    """Entries as the store returns them, typed as the pages read them: the gap at the best setting,
    counts and the setting as nullable integers, speedups as floats."""
    for name in NUMBERS:
        rows[name] = rows[name].astype("float64")
    rows["gap"] = 1 - rows["measured_speedup"] / rows["predicted_speedup"]
    for name in INTEGER_COLUMNS:
        rows[name] = rows[name].astype("Int64")
    return rows.reset_index(drop=True)
