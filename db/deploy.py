"""The deploy answer: for every deployment and load, the checkpoint to serve (the Leaderboard's winner by
measured speedup), its setting, measured against predicted speedup with the band, and its open alerts."""

from dataclasses import replace
from typing import NamedTuple

from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.db.leaderboard import LeaderboardFilter, PlaceWinner, winners


class DeployChoice(NamedTuple):
    """The checkpoint to serve on a deployment at a load, at its best setting, with its measured speedup
    against the prediction it is compared with and how many checkpoints it beat."""

    target_model: str  # "-" for a run that names none
    deployment: str
    concurrency: int
    run: str
    checkpoint: str
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    measured_speedup: float | None  # x no speculation
    predicted_speedup: float | None  # x no speculation
    error_band: float | None  # the prediction's expected relative error
    within_band: bool | None  # measured inside predicted ± the band; None without a prediction or band
    gap: float | None  # 1 - measured / predicted speedup
    measured_tps: float | None
    candidates: int
    runner_up_speedup: float | None
    open_alerts: int | None
    checkpoint_id: int
    deployment_id: int
    prediction_source: str  # the source predicted_speedup is from


# the deploy table's columns as the pages and the reference ranking have them
DEPLOY_COLUMNS = [name for name in DeployChoice._fields if name != "prediction_source"]


def deploy_table(session: Session, flt: LeaderboardFilter) -> list[DeployChoice]:
    """One row per (deployment, load): the entry with the highest measured speedup there (ties: the
    leaderboard's order), how many checkpoints competed and the runner-up's speedup; `within_band` says
    whether measured lies inside predicted ± the prediction's band (None without a prediction or band).
    Ordered by target model, deployment and load. Only the winners leave the store."""
    choices = [_choice(winner, flt.source) for winner in winners(session, flt)]
    return sorted(choices, key=lambda c: (c.target_model, c.deployment, c.concurrency))


def _choice(winner: PlaceWinner, source: str) -> DeployChoice:
    entry = winner.entry
    return DeployChoice(
        target_model=entry.target_model if entry.target_model is not None else "-",
        deployment=entry.deployment,
        concurrency=entry.concurrency,
        run=entry.run,
        checkpoint=entry.checkpoint,
        speculative_algorithm=entry.speculative_algorithm,
        num_steps=entry.num_steps,
        topk=entry.topk,
        num_draft_tokens=entry.num_draft_tokens,
        measured_speedup=entry.measured_speedup,
        predicted_speedup=entry.predicted_speedup,
        error_band=entry.error_band,
        within_band=within_band(entry.measured_speedup, entry.predicted_speedup, entry.error_band),
        gap=entry.gap,
        measured_tps=entry.measured_tps,
        candidates=winner.candidates,
        runner_up_speedup=winner.runner_up_speedup,
        open_alerts=entry.open_alerts,
        checkpoint_id=entry.checkpoint_id,
        deployment_id=entry.deployment_id,
        prediction_source=source,
    )


def within_band(measured: float | None, predicted: float | None, band: float | None) -> bool | None:
    """Whether measured lies inside predicted ± the band (None without a prediction or band)."""
    if predicted is None or band is None:
        return None
    if measured is None:
        return False
    return predicted * (1 - band) <= measured <= predicted * (1 + band)


def _entry_key(choice: DeployChoice) -> tuple:
    """What identifies a winner: its place and its entry."""
    return (
        choice.deployment_id,
        choice.concurrency,
        choice.checkpoint_id,
        choice.speculative_algorithm,
        choice.num_steps,
        choice.topk,
        choice.num_draft_tokens,
    )


def deploy_view(session: Session, flt: LeaderboardFilter) -> list[DeployChoice]:
    """deploy_table with `prediction_source`: a winner the chosen source does not predict (a deployment left
    uncalibrated) is compared with its theory prediction instead, so "no prediction" means none exists."""
    best = deploy_table(session, flt)
    if flt.source == PredictionSource.THEORY or all(c.predicted_speedup is not None for c in best):
        return best
    theory = {_entry_key(c): c for c in deploy_table(session, replace(flt, source=PredictionSource.THEORY))}
    return [_from_theory(choice, theory.get(_entry_key(choice))) for choice in best]


def _from_theory(choice: DeployChoice, theory: DeployChoice | None) -> DeployChoice:
    """The choice compared with the theory prediction when its source has none and theory has one."""
    if choice.predicted_speedup is not None or theory is None or theory.predicted_speedup is None:
        return choice
    return choice._replace(
        predicted_speedup=theory.predicted_speedup,
        error_band=theory.error_band,
        within_band=within_band(choice.measured_speedup, theory.predicted_speedup, theory.error_band),
        prediction_source=PredictionSource.THEORY.value,
    )
