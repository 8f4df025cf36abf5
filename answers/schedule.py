"""A checkpoint's depth schedule on a deployment: at each batch size the best draft depth of its depth
curve (answers/depth.py), or none when no depth beats the step without speculation; what it rests on and
which loads it extrapolates to; and the grid of every depth at every load (the What-if heat map)."""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.answers.depth import DepthAnswer, curve_of, default_max_steps
from specdash.answers.points import PointModel, point_model
from specdash.costmodel.domain import PredictionSource, TauSource
from specdash.costmodel.schedule import ScheduleEntry
from specdash.db.models import Checkpoint, Deployment, Run

# loads a schedule is made at when the deployment was benchmarked at none
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128)


class ScheduleError(LookupError):
    """A schedule that cannot be made; the message says what to give or ingest."""


@dataclass(frozen=True)
class CheckpointSchedule:
    deployment: str
    run: str
    checkpoint: str
    checkpoint_path: str | None
    algorithm: str | None  # the run's speculative algorithm (EAGLE3, ...)
    entries: list[ScheduleEntry]
    curves: list[DepthAnswer]  # the depth curve at each load of the entries
    source: PredictionSource
    version: int  # the parameter set's version
    tau_source: TauSource
    measured_loads: tuple[int, ...]  # the loads the deployment was benchmarked at

    @property
    def baseline_estimated(self) -> bool:
        return any(e.baseline_estimated for e in self.entries)

    @property
    def extrapolated_loads(self) -> list[float]:
        return [e.concurrency for e in self.entries if e.extrapolated]


def resolve(
    session: Session, deployment: str, run: str, checkpoint: str
) -> tuple[Deployment, Run, Checkpoint]:
    """The deployment, run and checkpoint these names name; ScheduleError saying how to list them."""
    found_deployment = session.scalars(select(Deployment).where(Deployment.name == deployment)).first()
    if found_deployment is None:
        raise ScheduleError(f"no deployment {deployment!r}: `specdash ls deployments` lists them")
    found_run = session.scalars(select(Run).where(Run.name == run)).first()
    if found_run is None:
        raise ScheduleError(f"no run {run!r}: `specdash ls runs` lists them")
    found = session.scalars(
        select(Checkpoint).where(Checkpoint.run_id == found_run.id, Checkpoint.name == checkpoint)
    ).first()
    if found is None:
        raise ScheduleError(
            f"run {run!r} has no checkpoint {checkpoint!r}: `specdash ls checkpoints --run {run}` lists them"
        )
    return found_deployment, found_run, found


def schedule_entry(curve: DepthAnswer) -> ScheduleEntry:
    """The best depth of a load's curve, or K = 0 (no speculation) when none beats the baseline."""
    best, base = curve.best, curve.baseline_tps
    speculate = round(best.tps, 9) > round(base, 9)
    tps = best.tps if speculate else base
    return ScheduleEntry(
        concurrency=curve.concurrency,
        num_steps=best.steps if speculate else 0,
        accept_length=best.accept_length if speculate else 1.0,
        tok_s=tps,
        aggregate_tok_s=tps * curve.concurrency,
        speedup=best.speedup if speculate else 1.0,
        baseline_estimated=best.baseline_estimated,
        extrapolated=curve.extrapolated_load,
    )


def model_for(session: Session, deployment: Deployment, run: Run, checkpoint: Checkpoint) -> PointModel:
    model = point_model(session, checkpoint.id, deployment.id)
    if model is None:
        raise ScheduleError(
            f"{run.name}/{checkpoint.name}: no accept length to schedule with: ingest its training log "
            "(per-position acceptance) or a benchmark that reports an accept length"
        )
    return model


def checkpoint_schedule(
    session: Session,
    deployment: str,
    run: str,
    checkpoint: str,
    concurrencies: Sequence[float] | None = None,
    max_steps: int | None = None,
) -> CheckpointSchedule:
    """The checkpoint's best depth at each concurrency on the deployment (its benchmarked loads by default)
    up to `max_steps` (answers.depth.default_max_steps by default)."""
    found_deployment, found_run, found = resolve(session, deployment, run, checkpoint)
    model = model_for(session, found_deployment, found_run, found)
    loads = sorted(concurrencies) if concurrencies else [float(c) for c in model.measured_loads]
    deepest = max_steps or default_max_steps(model)
    curves = [curve_of(model, float(load), 1, deepest) for load in loads or DEFAULT_CONCURRENCIES]
    if any(curve is None for curve in curves):
        raise ScheduleError(
            f"{deployment}: no step time to predict from: ingest a benchmark of it (with or without "
            "speculation) or set its baseline tok/s (`specdash ingest` a deployment record)"
        )
    made = [curve for curve in curves if curve is not None]
    return CheckpointSchedule(
        deployment=found_deployment.name,
        run=found_run.name,
        checkpoint=found.name,
        checkpoint_path=found.path,
        algorithm=found_run.speculative_algorithm,
        entries=[schedule_entry(curve) for curve in made],
        curves=made,
        source=model.source,
        version=model.version,
        tau_source=model.tau_source,
        measured_loads=model.measured_loads,
    )


def depth_load_grid(schedule: CheckpointSchedule) -> list[tuple[float, int, float]]:
    """(concurrency, depth, per-request tok/s) at every load and depth of a schedule (depth 0: no
    speculation): the What-if page's heat map."""
    out = []
    for curve in schedule.curves:
        out.append((curve.concurrency, 0, curve.baseline_tps))
        out += [(curve.concurrency, a.steps, a.tps) for a in curve.answers]
    return out
