"""Edits that change what the refresh computes (a deployment's profile or threshold, the global threshold,
a parameter set, an undone ingest, a rerun superseding a benchmark), each made in the store (db/profiles.py, db/runs.py) and followed by the
refresh of the predictions and gaps it changes."""

from sqlalchemy.orm import Session

from specdash.answers.refresh import refresh
from specdash.db import profiles, runs
from specdash.db.alerts import link_superseding
from specdash.db.calibration import CalibrationReport, apply_calibration
from specdash.db.models import AlertEvent, Deployment, ParameterSet
from specdash.db.runs import Removal
from specdash.summaries import RefreshSummary


def refresh_deployments(session: Session, deployment_ids: list[int]) -> RefreshSummary:
    """The predictions and gaps of every benchmark of these deployments, recomputed."""
    ids = profiles.deployment_benchmarks(session, deployment_ids)
    return refresh(session, ids)


def save_deployment(
    session: Session, values: dict, deployment_id: int | None = None
) -> tuple[Deployment, RefreshSummary]:
    """Create a deployment (deployment_id None) or edit one (db/profiles.save_deployment), and recompute
    its predictions and gaps. Raises ProfileError."""
    deployment = profiles.save_deployment(session, values, deployment_id)
    return deployment, refresh_deployments(session, [deployment.id])


def edit_deployment(
    session: Session, deployment_id: int, shown: dict, submitted: dict
) -> tuple[Deployment, RefreshSummary, list[str]]:
    """Apply only the fields the user changed (db/profiles.edit_deployment); a change recomputes the
    deployment's predictions and gaps. Returns the fields changed. Raises ProfileError."""
    deployment, changed = profiles.edit_deployment(session, deployment_id, shown, submitted)
    if not changed:
        return deployment, RefreshSummary(), []
    return deployment, refresh_deployments(session, [deployment.id]), changed


def restore_parameter_set(session: Session, parameter_set_id: int) -> tuple[ParameterSet, RefreshSummary]:
    """Make an earlier parameter set current again (db/profiles.restore_parameter_set); the deployment's
    predictions and gaps are recomputed."""
    pset = profiles.restore_parameter_set(session, parameter_set_id)
    return pset, refresh_deployments(session, [pset.deployment_id])


def set_deployment_threshold(session: Session, deployment_id: int, threshold: float | None) -> RefreshSummary:
    """A deployment's own gap threshold (None: use the global one); diagnoses are recomputed with it."""
    profiles.set_deployment_threshold(session, deployment_id, threshold)
    return refresh_deployments(session, [deployment_id])


def set_global_threshold(session: Session, threshold: float) -> RefreshSummary:
    """The gap threshold of every deployment without its own; diagnoses that depend on it are recomputed."""
    profiles.set_global_threshold(session, threshold)
    return refresh(session)


def apply_calibration_and_refresh(
    session: Session, report: CalibrationReport
) -> tuple[ParameterSet, RefreshSummary]:
    """Save a calibration fit as the deployment's active calibrated parameter set, then predict with it:
    every benchmark of the deployment gets a `calibrated` prediction and gap next to the theory one."""
    pset = apply_calibration(session, report)
    return pset, refresh_deployments(session, [report.deployment_id])


def apply_calibrations_and_refresh(
    session: Session, reports: list[CalibrationReport]
) -> tuple[list[ParameterSet], RefreshSummary]:
    """Apply every fit not applied yet in one transaction, then one refresh of the deployments touched."""
    sets = profiles.apply_calibrations(session, reports)
    touched = sorted({pset.deployment_id for pset in sets})
    if not touched:
        return [], RefreshSummary()
    return sets, refresh(session, profiles.deployment_benchmarks(session, touched))


def delete_ingested_file(session: Session, file_id: int) -> tuple[Removal, RefreshSummary]:
    """Undo an ingest (db/runs.delete_ingested_file), then refresh the deployments it touched, since a
    removed no-speculation baseline changes their predictions."""
    removal, remaining = runs.delete_ingested_file(session, file_id)
    return removal, refresh(session, remaining) if remaining else RefreshSummary()


def supersede(
    session: Session, benchmark_id: int, superseding_id: int, who: str, note: str | None = None
) -> list[AlertEvent]:
    """A valid rerun supersedes a benchmark (db/alerts.link_superseding): the benchmark competes no more,
    and a superseded no-speculation run is no longer a baseline, so what both touch is refreshed, the
    Leaderboard's entries at their places with it. Raises AlertChangeError."""
    events = link_superseding(session, benchmark_id, superseding_id, who, note)
    refresh(session, [benchmark_id, superseding_id])
    return events
