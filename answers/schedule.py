"""A checkpoint's depth schedule on a deployment: at each batch size the best draft depth of its depth
curve (answers/depth.py), or none when no depth beats the step without speculation; what it rests on and
which loads it extrapolates to; and the grid of every depth at every load (the What-if heat map)."""

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.answers.depth import DepthAnswer, curve_of, default_max_steps
from specdash.answers.evidence import Win, measured_wins
from specdash.answers.points import PointAnswer, PointModel, point_model
from specdash.costmodel.context import ContextModel
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
    lengths: ContextModel | None = None  # how its rounds move with context

    @property
    def baseline_estimated(self) -> bool:
        return any(e.baseline_estimated for e in self.entries)

    @property
    def extrapolated_loads(self) -> list[float]:
        return sorted(
            {e.concurrency for e, c in zip(self.entries, self.curves, strict=True) if c.extrapolated_load}
        )

    @property
    def extrapolated_contexts(self) -> list[float]:
        return sorted({c.context_tokens for c in self.curves if c.extrapolated_context and c.context_tokens})

    @property
    def measured_contexts(self) -> tuple[float, ...]:
        return self.lengths.measured if self.lengths is not None else ()


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


def schedule_entry(
    curve: DepthAnswer, wins: Sequence[Win] = (), reference: float | None = None
) -> ScheduleEntry:
    """The best depth of a load's curve, or K = 0 (no speculation) when none beats the baseline, unless
    the checkpoint measured speculation beating the plain step at this load and context (`wins`) and the
    prediction's margin for the plain step lies within its band: then the curve's best depth."""
    best, base = curve.best, curve.baseline_tps
    speculate = round(best.tps, 9) > round(base, 9)
    evidence = None
    if not speculate:
        best, evidence = _evidence_pick(curve, wins, reference)
        speculate = evidence is not None
    tps = best.tps if speculate else base
    return ScheduleEntry(
        concurrency=curve.concurrency,
        num_steps=best.steps if speculate else 0,
        accept_length=best.accept_length if speculate else 1.0,
        tok_s=tps,
        aggregate_tok_s=tps * curve.concurrency,
        speedup=best.speedup if speculate else 1.0,
        baseline_estimated=best.baseline_estimated,
        extrapolated=curve.extrapolated_load or curve.extrapolated_context,
        context_tokens=curve.context_tokens,
        by_depth=((0, base), *((a.steps, a.tps) for a in curve.answers)),
        evidence=evidence,
    )


def _evidence_pick(
    curve: DepthAnswer, wins: Sequence[Win], reference: float | None
) -> tuple[PointAnswer, str | None]:
    """The depth to run where the curve says "no speculation" but the checkpoint measured speculation
    beating the plain step at this load and context: the depth that measured the biggest win whose
    predicted deficit lies within the band (else the curve's best, if its deficit does); no evidence, or
    a deficit beyond the band, keeps the curve's answer."""
    base, band = curve.baseline_tps, curve.band
    measured = sorted(
        (w for w in wins if w.matches(curve.concurrency, curve.context_tokens, reference)),
        key=lambda w: -w.speedup,
    )
    depths = {a.steps: a for a in curve.answers}
    for win in measured:
        for candidate in (depths.get(win.steps), curve.best):
            if candidate is not None and base <= candidate.tps * (1.0 + band):
                return candidate, (
                    f"measured {win.speedup:.2f}x with speculation at this load (K={win.steps}); the plain "
                    f"step's predicted lead over K={candidate.steps} ({base / candidate.tps - 1.0:.1%}) is "
                    f"within the band ({band:.0%})"
                )
    return curve.best, None


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
    contexts: Sequence[float] | None = None,
) -> CheckpointSchedule:
    """The checkpoint's best depth at each concurrency on the deployment (its benchmarked loads by default)
    and each mean decode context in `contexts` (default: the context its benchmarks ran at), up to
    `max_steps` (answers.depth.default_max_steps by default)."""
    found_deployment, found_run, found = resolve(session, deployment, run, checkpoint)
    model = model_for(session, found_deployment, found_run, found)
    loads = sorted(concurrencies) if concurrencies else [float(c) for c in model.measured_loads]
    deepest = max_steps or default_max_steps(model)
    asked: list[float | None] = list(contexts) if contexts else [None]
    curves = [
        curve_of(model, float(load), 1, deepest, context)
        for context in asked
        for load in loads or DEFAULT_CONCURRENCIES
    ]
    if any(curve is None for curve in curves):
        raise ScheduleError(
            f"{deployment}: no step time to predict from: ingest a benchmark of it (with or without "
            "speculation) or set its baseline tok/s (`specdash ingest` a deployment record)"
        )
    made = [curve for curve in curves if curve is not None]
    wins = measured_wins(session, model)
    lengths = model.lengths
    reference = lengths.reference_tokens if lengths is not None and lengths.stated else None
    return CheckpointSchedule(
        deployment=found_deployment.name,
        run=found_run.name,
        checkpoint=found.name,
        checkpoint_path=found.path,
        algorithm=found_run.speculative_algorithm,
        entries=[schedule_entry(curve, wins, reference) for curve in made],
        curves=made,
        source=model.source,
        version=model.version,
        tau_source=model.tau_source,
        measured_loads=model.measured_loads,
        lengths=model.lengths,
    )


def depth_load_grid(
    schedule: CheckpointSchedule, context_tokens: float | None = None
) -> list[tuple[float, int, float]]:
    """(concurrency, depth, per-request tok/s) at every load and depth of a schedule (depth 0: no
    speculation) at one context (the first asked, or the benchmarks'): the What-if page's heat map."""
    contexts = [c.context_tokens for c in schedule.curves]
    wanted = context_tokens if context_tokens is not None else (contexts[0] if contexts else None)
    out = []
    for curve in (c for c in schedule.curves if c.context_tokens == wanted):
        out.append((curve.concurrency, 0, curve.baseline_tps))
        out += [(curve.concurrency, a.steps, a.tps) for a in curve.answers]
    return out
