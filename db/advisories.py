"""Depth advisories as the store keeps them: the runs to advise and the deployments each is for, the
stored advisories with their status, note and history like the alerts, the changes the advice decides
(answers/advice.py) written, and the minimum gain setting."""

from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import ACTIVE_STATUSES, GapStatus, PredictionSource
from specdash.db import investigation
from specdash.db.changes import record_change
from specdash.db.live_models import Advisory, AdvisoryEvent, RunDeployment
from specdash.db.models import (
    Deployment,
    ParameterSet,
    Run,
    utcnow,
)
from specdash.db.parameters import ensure_theory_set, latest_active_set
from specdash.db.settings import get_setting, set_setting

if TYPE_CHECKING:  # pandas loads only where a frame is made: an ingest needs none
    import pandas as pd

ADVISOR = "specdash"  # who the history names when the advice itself changes
MIN_GAIN_SETTING = "advisory_min_gain"
OPEN_STATUSES = ACTIVE_STATUSES  # advisories share the alerts' statuses


class AdvisoryChangeError(ValueError):
    """A status change that cannot be made; the message says why."""


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


def named_deployments(session: Session, run_id: int) -> list[Deployment]:
    """The deployments the user named as the run's targets, by name."""
    return list(
        session.scalars(
            select(Deployment)
            .join(RunDeployment, RunDeployment.deployment_id == Deployment.id)
            .where(RunDeployment.run_id == run_id)
            .order_by(Deployment.name)
        )
    )


def deployments_by_name(session: Session) -> list[Deployment]:
    return list(session.scalars(select(Deployment).order_by(Deployment.name)))


def name_target_deployments(session: Session, run: Run, names: list[str]) -> None:
    """Record deployments the user named as the run's targets; unknown names are an error."""
    for name in names:
        deployment = session.scalar(select(Deployment).where(Deployment.name == name))
        if deployment is None:
            raise AdvisoryChangeError(f"no deployment named {name!r}; see the deployments in 'specdash gaps'")
        if session.get(RunDeployment, (run.id, deployment.id)) is None:
            session.add(RunDeployment(run_id=run.id, deployment_id=deployment.id))
    session.flush()


def parameter_set(session: Session, deployment: Deployment) -> ParameterSet:
    """The deployment's active calibrated set when it has one, else its theory set."""
    calibrated = latest_active_set(session, deployment.id, PredictionSource.CALIBRATED)
    return calibrated or ensure_theory_set(session, deployment)


def runs_to_advise(session: Session, run_ids: list[int] | None = None) -> list[Run]:
    """The runs (of those given; all when None) with a trained depth to advise on."""
    query = select(Run).where(Run.ttt_length.is_not(None))
    if run_ids is not None:
        query = query.where(Run.id.in_(run_ids))
    return list(session.scalars(query))


def depth_advisories(session: Session, run_ids: list[int]) -> dict[tuple[int, int, int], Advisory]:
    """The runs' depth advisories by (run, deployment, concurrency)."""
    return {
        (a.run_id, a.deployment_id, a.concurrency): a
        for a in session.scalars(
            select(Advisory).where(Advisory.kind == "depth", Advisory.run_id.in_(run_ids))
        )
    }


def raise_advisory(
    session: Session, run_id: int, deployment_id: int, concurrency: int, values: dict[str, Any]
) -> int:
    """A new open depth advisory with these values, its history starting with its message; its id."""
    row = Advisory(
        run_id=run_id,
        deployment_id=deployment_id,
        concurrency=concurrency,
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
    return row.id


def update_advisory(
    session: Session,
    advisory_id: int,
    values: dict[str, Any] | None,
    active: bool,
    touched: bool,
    event: tuple[str, str] | None,
) -> None:
    """Keep the advice's new values (when given) and whether it holds; specdash moves it to the event's
    status saying why (a person's note stays); `touched` moves its update time."""
    row = session.get_one(Advisory, advisory_id)
    for k, v in (values or {}).items():
        setattr(row, k, v)
    row.active = active
    if event is not None:
        status, note = event
        investigation.record_change(
            session, row, AdvisoryEvent, {"advisory_id": row.id}, status, ADVISOR, note, keep_note=True
        )
    elif touched:
        row.updated_at = utcnow()


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
