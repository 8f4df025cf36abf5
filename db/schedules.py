"""A checkpoint's depth schedule on a deployment: the best draft depth at each batch size under the
deployment's load model (db/loadmodels.py), from the drafter's trained rates or, without them, its measured
accept lengths; and predictions at any concurrency and depth (the What-if heat map)."""

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel.acceptance import predict_accept_length
from specdash.costmodel.depth import DepthPoint
from specdash.costmodel.schedule import ScheduleEntry, depth_schedule, load_depth_sweep
from specdash.costmodel.throughput import draft_steps
from specdash.db.acceptance import checkpoint_rates, measured_acceptance
from specdash.db.loadmodels import DeploymentLoad, deployment_load, served_loads
from specdash.db.models import Benchmark, Checkpoint, Deployment, ParameterSet, Run

# loads a schedule is made at when the deployment was benchmarked at none
DEFAULT_CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64, 128)
DEFAULT_MAX_STEPS = 8


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
    load: DeploymentLoad
    version: int | None  # the calibrated set's version, None for the priors
    accept_lengths: dict[int, float]  # tau per candidate depth
    tau_source: str  # training (the trained rates, extrapolated past the trained depth) | measured
    drafter: str = ""  # the key (run id) the load model holds the drafter's own draft cost under

    @property
    def baseline_estimated(self) -> bool:
        return self.load.baseline_estimated


@dataclass(frozen=True)
class _Target:
    deployment: Deployment
    run: Run
    checkpoint: Checkpoint


def _resolve(session: Session, deployment: str, run: str, checkpoint: str) -> _Target:
    found_deployment = session.scalars(select(Deployment).where(Deployment.name == deployment)).first()
    if found_deployment is None:
        raise ScheduleError(f"no deployment {deployment!r}: `specdash export deployments` lists them")
    found_run = session.scalars(select(Run).where(Run.name == run)).first()
    if found_run is None:
        raise ScheduleError(f"no run {run!r}: `specdash export runs` lists them")
    found = session.scalars(
        select(Checkpoint).where(Checkpoint.run_id == found_run.id, Checkpoint.name == checkpoint)
    ).first()
    if found is None:
        raise ScheduleError(f"run {run!r} has no checkpoint {checkpoint!r}: `specdash export checkpoints`")
    return _Target(found_deployment, found_run, found)


def _measured_taus(session: Session, checkpoint_id: int, deployment_id: int) -> dict[int, float]:
    """Median measured tau per chain depth of the checkpoint's benchmarks on the deployment."""
    rows = session.execute(
        select(
            Benchmark.num_steps, Benchmark.topk, Benchmark.num_draft_tokens, Benchmark.accept_length
        ).where(
            Benchmark.checkpoint_id == checkpoint_id,
            Benchmark.deployment_id == deployment_id,
            Benchmark.accept_length.is_not(None),
            Benchmark.superseded_by_id.is_(None),
        )
    ).all()
    by_depth: dict[int, list[float]] = defaultdict(list)
    for steps, topk, tokens, tau in rows:
        depth = draft_steps(steps, topk, tokens)
        if depth and (topk or 1) == 1 and tau:
            by_depth[depth].append(tau)
    return {k: statistics.median(v) for k, v in sorted(by_depth.items())}


def _loads(session: Session, deployment_id: int) -> list[float]:
    return [float(c) for c in served_loads(session, deployment_id)] or [
        float(c) for c in DEFAULT_CONCURRENCIES
    ]


def accept_lengths_for(
    session: Session, target_checkpoint: int, deployment_id: int, load: DeploymentLoad, max_steps: int
) -> tuple[dict[int, float], str]:
    """tau per candidate depth: the trained rates chained under the load model's acc-to-acceptance factor
    (K = 1..max_steps), else the measured accept lengths (only the measured depths are candidates)."""
    rates = checkpoint_rates(session, [target_checkpoint]).get(target_checkpoint)
    if rates:
        factor = load.acc_to_acceptance
        taus = {
            k: predict_accept_length(rates, k, 1, k + 1, factor).accept_length
            for k in range(1, max_steps + 1)
        }
        return taus, "training"
    measured = _measured_taus(session, target_checkpoint, deployment_id)
    return {k: v for k, v in measured.items() if k <= max_steps}, "measured"


def checkpoint_schedule(
    session: Session,
    deployment: str,
    run: str,
    checkpoint: str,
    concurrencies: Sequence[float] | None = None,
    max_steps: int | None = None,
) -> CheckpointSchedule:
    """The checkpoint's best depth at each concurrency on the deployment (its benchmarked loads by default)
    up to `max_steps` (the run's trained depth by default)."""
    target = _resolve(session, deployment, run, checkpoint)
    load = deployment_load(session, target.deployment.id)
    if load is None:
        raise ScheduleError(
            f"{deployment}: no step time to predict from: ingest a benchmark of it (with or without "
            "speculation) or set its baseline tok/s (`specdash ingest` a deployment record)"
        )
    deepest = max_steps or target.run.ttt_length or DEFAULT_MAX_STEPS
    taus, source = accept_lengths_for(session, target.checkpoint.id, target.deployment.id, load, deepest)
    if not taus:
        raise ScheduleError(
            f"{run}/{checkpoint}: no accept length to schedule with: ingest its training log (per-position "
            "acceptance) or a benchmark that reports an accept length"
        )
    loads = sorted(concurrencies) if concurrencies else _loads(session, target.deployment.id)
    entries = depth_schedule(
        load.params,
        taus,
        loads,
        max_steps=deepest,
        drafter=str(target.run.id),
        baseline_estimated=load.baseline_estimated,
    )
    version = None
    if load.parameter_set_id is not None:
        version = session.scalar(select(ParameterSet.version).where(ParameterSet.id == load.parameter_set_id))
    return CheckpointSchedule(
        deployment=target.deployment.name,
        run=target.run.name,
        checkpoint=target.checkpoint.name,
        checkpoint_path=target.checkpoint.path,
        algorithm=target.run.speculative_algorithm,
        entries=entries,
        load=load,
        version=version,
        accept_lengths=taus,
        tau_source=source,
        drafter=str(target.run.id),
    )


def depth_load_grid(
    schedule: CheckpointSchedule, concurrencies: Sequence[float]
) -> list[tuple[float, int, float]]:
    """(concurrency, depth, per-request tok/s) at every load and candidate depth of a schedule (depth 0:
    no speculation): the What-if page's heat map."""
    params = schedule.load.params
    out = []
    for batch in concurrencies:
        out.append((batch, 0, params.tps(1.0, batch, 0)))
        for steps, tau in sorted(schedule.accept_lengths.items()):
            out.append((batch, steps, params.tps(tau, batch, steps, drafter=schedule.drafter)))
    return out


@dataclass(frozen=True)
class DepthCurve:
    """A checkpoint's predicted tok/s at every draft depth on a deployment at one load (the Checkpoints
    page's by-depth chart), from the deployment's load model: the one its predictions at any load use."""

    points: list[DepthPoint]
    baseline_tps: float  # the step without speculation at this load, per request
    source: str  # calibrated | theory (the load model's)
    version: int | None  # the calibrated set's version
    tau_source: str  # training (trained rates) | measured (rates derived from measured accept lengths)
    depth: int  # positions the rates hold for; deeper ones are extrapolated


def depth_curve(
    session: Session,
    checkpoint_id: int,
    deployment_id: int,
    concurrency: int,
    topk: int = 1,
    max_steps: int = DEFAULT_MAX_STEPS,
    dataset: str | None = None,
) -> DepthCurve | None:
    """K = 1..max_steps at `concurrency` and `topk`: tau from the trained rates (under the load model's
    acc-to-acceptance factor), else from the rates the benchmarks' accept lengths imply (on `dataset`, or all),
    the round from the load model with the drafter's own draft cost; None without a load model or rates."""
    load = deployment_load(session, deployment_id)
    checkpoint = session.get(Checkpoint, checkpoint_id)
    if load is None or checkpoint is None:
        return None
    rates, factor, tau_source = (
        checkpoint_rates(session, [checkpoint_id]).get(checkpoint_id),
        load.acc_to_acceptance,
        "training",
    )
    if not rates:
        rates, factor, tau_source = (
            measured_acceptance(session, checkpoint_id, dataset).rates,
            1.0,
            "measured",
        )
    if not rates:
        return None
    params = load.params
    points = load_depth_sweep(params, rates, max_steps, concurrency, str(checkpoint.run_id), topk, factor)
    version = None
    if load.parameter_set_id is not None:
        version = session.scalar(select(ParameterSet.version).where(ParameterSet.id == load.parameter_set_id))
    return DepthCurve(points, params.tps(1.0, concurrency, 0), load.source, version, tau_source, len(rates))
