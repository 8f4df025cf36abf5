"""Depth advisories: for each run and each deployment it is for, at each load, whether the deployment wants
deeper drafts than the run trains (the cost model's advisor), kept as records with a status, a note and
a history like the alerts; refreshed as training metrics arrive and quiet while the configuration is fine."""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import ACTIVE_STATUSES, GapStatus, PredictionSource
from specdash.costmodel.sources import advice_loads
from specdash.db import investigation
from specdash.db.acceptance import last_accuracies, latest_checkpoint_rates
from specdash.db.changes import record_change
from specdash.db.live_models import Advisory, AdvisoryEvent, RunDeployment
from specdash.db.models import (
    Deployment,
    ParameterSet,
    Run,
    utcnow,
)
from specdash.db.parameters import Baselines, cost_set, deployment_facts, ensure_theory_set, load_baselines
from specdash.db.settings import get_setting, set_setting

if TYPE_CHECKING:  # pandas loads only where a frame is made: an ingest needs none
    import pandas as pd

    # nor numpy (the load model's fit) where no run is advised: a log of a run with no trained depth
    from specdash.costmodel.advisor import DepthAdvice

ADVISOR = "specdash"  # who the history names when the advice itself changes
MIN_GAIN_SETTING = "advisory_min_gain"
OPEN_STATUSES = ACTIVE_STATUSES  # advisories share the alerts' statuses


class AdvisoryChangeError(ValueError):
    """A status change that cannot be made; the message says why."""


@dataclass
class AdvisorySummary:
    runs: int = 0
    advised: int = 0  # advisories that hold now
    new: list[int] = field(default_factory=list)  # ids of advisories raised or reopened by this refresh
    resolved: int = 0


def get_min_gain(session: Session) -> float:
    from specdash.costmodel.advisor import DEFAULT_MIN_GAIN

    value = get_setting(session, MIN_GAIN_SETTING)
    return float(value) if value is not None else DEFAULT_MIN_GAIN


def set_min_gain(session: Session, gain: float) -> None:
    if not 0 <= gain < 10:
        raise ValueError("advisory minimum gain must be in [0, 10)")
    before = get_min_gain(session)
    set_setting(session, MIN_GAIN_SETTING, repr(float(gain)))
    if before != float(gain):
        record_change(session, "advice", "setting", "global", MIN_GAIN_SETTING, before, float(gain))


def _short(model: str | None) -> str:
    return (model or "").rstrip("/").rsplit("/", 1)[-1].strip().lower()


def target_deployments(session: Session, run: Run) -> list[Deployment]:
    """The deployments a run is for: those the user named, else those serving the run's target model."""
    named = list(
        session.scalars(
            select(Deployment)
            .join(RunDeployment, RunDeployment.deployment_id == Deployment.id)
            .where(RunDeployment.run_id == run.id)
            .order_by(Deployment.name)
        )
    )
    target = run.target_model or (run.config or {}).get(
        "target_model_path"
    )  # the log, else the trainer config
    if named or not isinstance(target, str) or not target:
        return named
    want = _short(target)
    return [
        d
        for d in session.scalars(select(Deployment).order_by(Deployment.name))
        if d.target_model and _short(d.target_model) == want
    ]


def name_target_deployments(session: Session, run: Run, names: list[str]) -> None:
    """Record deployments the user named as the run's targets; unknown names are an error."""
    for name in names:
        deployment = session.scalar(select(Deployment).where(Deployment.name == name))
        if deployment is None:
            raise AdvisoryChangeError(f"no deployment named {name!r}; see the deployments in 'specdash gaps'")
        if session.get(RunDeployment, (run.id, deployment.id)) is None:
            session.add(RunDeployment(run_id=run.id, deployment_id=deployment.id))
    session.flush()


def _parameter_set(session: Session, deployment: Deployment) -> ParameterSet:
    """The deployment's active calibrated set when it has one, else its theory set."""
    calibrated = session.scalar(
        select(ParameterSet)
        .where(
            ParameterSet.deployment_id == deployment.id,
            ParameterSet.source == PredictionSource.CALIBRATED,
            ParameterSet.is_active.is_(True),
        )
        .order_by(ParameterSet.version.desc())
        .limit(1)
    )
    return calibrated or ensure_theory_set(session, deployment)


def _event(
    session: Session, advisory: Advisory, status: str, note: str | None, who: str = ADVISOR
) -> AdvisoryEvent:
    """specdash moves the advisory to `status` as the advice changes, saying why (a person's note stays)."""
    owner = {"advisory_id": advisory.id}
    return investigation.record_change(
        session, advisory, AdvisoryEvent, owner, status, who, note, keep_note=True
    )


@dataclass(frozen=True)
class _Advising:
    """What one refresh of advice reads once."""

    min_gain: float
    baselines: Baselines
    existing: dict[tuple[int, int, int], Advisory]  # (run, deployment, concurrency) -> its advisory


class _Target(NamedTuple):
    """One run advised on one deployment at one load, with the curve and parameter set used."""

    run: Run
    deployment: Deployment
    concurrency: int
    label: str
    curve: tuple[float, ...]
    source: str  # where the curve came from: training | prior
    parameter_set_id: int


def refresh_advisories(session: Session, run_ids: list[int] | None = None) -> AdvisorySummary:
    """Recompute the depth advice of the given runs (all when None) in the caller's transaction."""
    session.flush()
    query = select(Run).where(Run.ttt_length.is_not(None))
    if run_ids is not None:
        if not run_ids:
            return AdvisorySummary()
        query = query.where(Run.id.in_(run_ids))
    runs = list(session.scalars(query))
    summary = AdvisorySummary(runs=len(runs))
    if not runs:
        return summary
    from specdash.costmodel.advisor import CURVE_MIN_STEPS, choose_curve

    advising = _Advising(
        get_min_gain(session),
        load_baselines(session),
        {
            (a.run_id, a.deployment_id, a.concurrency): a
            for a in session.scalars(
                select(Advisory).where(Advisory.kind == "depth", Advisory.run_id.in_([r.id for r in runs]))
            )
        },
    )
    curves = last_accuracies(session, [r.id for r in runs])
    for run in runs:
        rates, logged = curves.get(run.id, ([], None))
        if not rates:
            rates = latest_checkpoint_rates(session, run.id)
            logged = CURVE_MIN_STEPS if rates else None  # a saved checkpoint's acceptance is a settled curve
        curve, source = choose_curve(rates, logged, run.speculative_algorithm)
        for deployment in target_deployments(session, run):
            _advise_on(session, summary, advising, run, deployment, curve, source)
    session.flush()
    return summary


def _advise_on(
    session: Session,
    summary: AdvisorySummary,
    advising: _Advising,
    run: Run,
    deployment: Deployment,
    curve: tuple[float, ...],
    source: str,
) -> None:
    """The run's advice on one deployment at each load it serves: under its load model (fitted at several
    loads, or on estimated baselines) the schedule's depth at every benchmarked load; else at every load
    it was measured at without speculation (else batch 1)."""
    from specdash.costmodel.advisor import advise_depth_at_load
    from specdash.db.loadmodels import deployment_load, served_loads

    trained_depth = run.ttt_length
    if trained_depth is None:  # advise_runs selects only runs with a trained depth
        return
    pset = _parameter_set(session, deployment)
    load = deployment_load(session, deployment.id)
    if load is not None and load.by_load:
        scaled = [min(1.0, rate * load.acc_to_acceptance) for rate in curve]
        advices = [
            (
                c,
                advise_depth_at_load(
                    load.params, scaled, trained_depth, c, str(run.id), min_gain=advising.min_gain
                ),
            )
            for c in served_loads(session, deployment.id)
        ]
        set_id = load.parameter_set_id or pset.id
    else:
        advices = _advice_by_baseline(advising, trained_depth, deployment, pset, curve)
        set_id = pset.id
    for concurrency, advice in advices:
        label = deployment.name if concurrency == 1 else f"{deployment.name} at concurrency {concurrency}"
        target = _Target(run, deployment, concurrency, label, curve, source, set_id)
        row = advising.existing.get((run.id, deployment.id, concurrency))
        if advice.advise:
            _hold(session, summary, row, target, advice)
        elif row is not None and row.active:
            _quiet(session, summary, row, target, advice)


def _advice_by_baseline(
    advising: _Advising,
    trained_depth: int,
    deployment: Deployment,
    pset: ParameterSet,
    curve: tuple[float, ...],
) -> list[tuple[int, "DepthAdvice"]]:
    """The batch-1 cost model's advice at each load with a measured baseline (else batch 1 at the
    profile's)."""
    from specdash.costmodel.advisor import advise_depth

    costs = cost_set(pset)
    baselines = advising.baselines
    loads = advice_loads(
        baselines.measured_loads(deployment.id), pset.baseline_tps or deployment.baseline_tps
    )
    scaled = [min(1.0, rate * pset.acc_to_acceptance) for rate in curve]
    facts = deployment_facts(deployment)
    out = []
    for concurrency, baseline_tps in loads:
        # a calibrated set's drafting and overhead, fitted at its reference load, grow with the step
        reference_tps = baselines.at_reference(deployment.id, costs.fit, concurrency, None, facts)
        advice = advise_depth(
            # the profile's costs, the priors for what it leaves unstated, at this load
            costs.costs(baseline_tps, facts, concurrency=concurrency, reference_baseline_tps=reference_tps),
            scaled,
            trained_depth,
            min_gain=advising.min_gain,
        )
        out.append((concurrency, advice))
    return out


def _quiet(
    session: Session, summary: AdvisorySummary, row: Advisory, target: _Target, advice: "DepthAdvice"
) -> None:
    """The configuration is fine now: the advisory goes quiet, and resolved when still open."""
    row.active = False
    note = (
        f"configuration fine now: on {target.label} the best depth is {advice.best.steps} "
        f"({advice.gain:+.0%} against the trained {advice.trained_depth})"
    )
    if row.status in OPEN_STATUSES:
        _event(session, row, GapStatus.RESOLVED, note)
        summary.resolved += 1


def _hold(
    session: Session, summary: AdvisorySummary, row: Advisory | None, target: _Target, advice: "DepthAdvice"
) -> None:
    """The advice holds: a new advisory, or the stored one updated (and opened again when specdash had
    resolved it)."""
    message = advice.message(target.label) + (
        f" (curve: {target.run.speculative_algorithm or 'EAGLE3'} prior, before the run's own accuracies settle)"
        if target.source == "prior"
        else ""
    )
    values = dict(
        trained_depth=advice.trained_depth,
        best_depth=advice.best.steps,
        gain=advice.gain,
        trained_tps=advice.at_trained.tps,
        best_tps=advice.best.tps,
        suggested_ttt=advice.suggested_ttt,
        time_factor=advice.time_factor,
        curve_source=target.source,
        curve=[round(r, 6) for r in target.curve],
        parameter_set_id=target.parameter_set_id,
        message=message,
    )
    summary.advised += 1
    if row is None:
        _raise(session, summary, target, values)
        return
    changed = any(getattr(row, k) != v for k, v in values.items())
    for k, v in values.items():
        setattr(row, k, v)
    if not row.active:
        row.active = True
        if row.status == GapStatus.RESOLVED:  # resolved by specdash when it was fine; a person's status stays
            _event(session, row, GapStatus.OPEN, f"advice holds again: {message}")
            summary.new.append(row.id)
    elif changed:
        row.updated_at = utcnow()


def _raise(session: Session, summary: AdvisorySummary, target: _Target, values: dict[str, Any]) -> None:
    row = Advisory(
        run_id=target.run.id,
        deployment_id=target.deployment.id,
        concurrency=target.concurrency,
        kind="depth",
        status=GapStatus.OPEN,
        active=True,
        **values,
    )
    session.add(row)
    session.flush()
    session.add(
        AdvisoryEvent(
            advisory_id=row.id,
            who=ADVISOR,
            from_status=None,
            to_status=GapStatus.OPEN,
            note=values["message"],
            at=row.created_at,
        )
    )
    summary.new.append(row.id)


# --- reading and investigating --------------------------------------------------------------------------


def advisory_rows(
    session: Session,
    run_ids: list[int] | None = None,
    statuses: tuple[str, ...] = (),
    active_only: bool = False,
) -> list[dict]:
    """Advisories (newest change first) with their run and deployment names."""
    query = (
        select(
            Advisory.id,
            Run.name.label("run"),
            Deployment.name.label("deployment"),
            Advisory.concurrency,
            Advisory.trained_depth,
            Advisory.best_depth,
            Advisory.gain,
            Advisory.trained_tps,
            Advisory.best_tps,
            Advisory.suggested_ttt,
            Advisory.time_factor,
            Advisory.curve_source,
            Advisory.message,
            Advisory.active,
            Advisory.status,
            Advisory.note,
            Advisory.updated_at,
        )
        .join(Run, Advisory.run_id == Run.id)
        .join(Deployment, Advisory.deployment_id == Deployment.id)
        .order_by(Advisory.updated_at.desc(), Advisory.id.desc())
    )
    if run_ids is not None:
        query = query.where(Advisory.run_id.in_(run_ids))
    if statuses:
        query = query.where(Advisory.status.in_(statuses))
    if active_only:
        query = query.where(Advisory.active.is_(True))
    return [dict(row) for row in session.execute(query).mappings()]


def open_advisory_count(session: Session) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Advisory)
            .where(Advisory.active.is_(True), Advisory.status.in_(OPEN_STATUSES))
        )
        or 0
    )


def advisory_history(session: Session, advisory_id: int) -> "pd.DataFrame":
    """Who changed the advisory's status or note (specdash itself as the advice changed), oldest first."""
    return investigation.history_frame(session, AdvisoryEvent, AdvisoryEvent.advisory_id, advisory_id)


def change_advisory_status(
    session: Session, advisory_id: int, status: str, who: str, note: str | None = None
) -> AdvisoryEvent:
    """Set an advisory's status (and note) and record who did; the alerts' rules."""
    return investigation.change_status(
        session,
        session.get(Advisory, advisory_id),
        AdvisoryEvent,
        {"advisory_id": advisory_id},
        status,
        who,
        note,
        AdvisoryChangeError,
        "advisory",
        missing=f"no advisory with id {advisory_id}",
        already="the advisory",
    )


def save_advice_settings(session: Session, min_gain: float) -> AdvisorySummary:
    """A new minimum gain, and every run's advice recomputed with it."""
    try:
        set_min_gain(session, min_gain)
    except ValueError as exc:
        raise AdvisoryChangeError(str(exc)) from None
    return refresh_advisories(session)


def live_stamp(session: Session) -> tuple:
    """What changes whenever a followed file, an advisory or an ingested file does: the dashboard compares
    it between reruns to know its cached reads are stale (another process wrote)."""
    from specdash.db.live_models import FollowedFile
    from specdash.db.models import IngestedFile

    return (
        session.scalar(select(func.max(FollowedFile.updated_at))),
        session.scalar(select(func.max(Advisory.updated_at))),
        session.scalar(select(func.max(IngestedFile.id))),
    )


def following_since(session: Session, since) -> bool:
    """Whether some followed file was read after `since` (a follower is probably running)."""
    from specdash.db.live_models import FollowedFile

    read = session.scalar(
        select(func.count()).select_from(FollowedFile).where(FollowedFile.updated_at >= since)
    )
    return (read or 0) > 0
