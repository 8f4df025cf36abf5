"""Edits made from the Settings page: deployment cost profiles, gap thresholds and calibrated parameter
sets, each followed by a refresh of the predictions and gaps it changes; and the parameter sets to list."""

import pandas as pd
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.calibration import CalibrationReport, apply_calibration
from specdash.db.models import Benchmark, Deployment, ParameterSet
from specdash.db.parameters import ensure_theory_set
from specdash.db.refresh import RefreshSummary, refresh
from specdash.db.settings import set_gap_threshold
from specdash.ingest.records import DeploymentRecord

# What the Settings page edits; the same fields and rules as a deployment record in a native file.
PROFILE_FIELDS = (
    "name",
    "gpu",
    "num_gpus",
    "tp_size",
    "interconnect",
    "engine",
    "baseline_tps",
    "comm_fraction",
    "draft_step_ms",
    "round_overhead_ms",
    "verify_growth_compute",
    "verify_growth_comm",
    "gap_threshold",
    "notes",
)


class ProfileError(ValueError):
    """Invalid profile values; one `field: message` line per problem."""


def _validated(values: dict) -> DeploymentRecord:
    given = {k: v for k, v in values.items() if k in PROFILE_FIELDS and v is not None and v != ""}
    try:
        return DeploymentRecord.model_validate(given)
    except ValidationError as exc:
        lines = []
        for error in exc.errors(include_url=False):
            field = ".".join(str(part) for part in error["loc"]) or "profile"
            lines.append(f"{field}: {error['msg'].removeprefix('Value error, ')}")
        raise ProfileError("\n".join(lines)) from None


def _refresh_deployment(session: Session, deployment_id: int) -> RefreshSummary:
    ids = list(session.scalars(select(Benchmark.id).where(Benchmark.deployment_id == deployment_id)))
    return refresh(session, ids)


def save_deployment(
    session: Session, values: dict, deployment_id: int | None = None
) -> tuple[Deployment, RefreshSummary]:
    """Create a deployment (deployment_id None) or edit one; a changed cost profile becomes a new theory
    parameter set and the deployment's predictions and gaps are recomputed. Raises ProfileError."""
    record = _validated(values)
    clash = session.scalar(select(Deployment.id).where(Deployment.name == record.name))
    if clash is not None and clash != deployment_id:
        raise ProfileError(f"name: a deployment named {record.name!r} already exists")
    if deployment_id is None:
        deployment = Deployment(name=record.name)
        session.add(deployment)
    else:
        deployment = session.get(Deployment, deployment_id)
        if deployment is None:
            raise ProfileError(f"deployment: no deployment with id {deployment_id}")
    for name in PROFILE_FIELDS:
        setattr(deployment, name, getattr(record, name))
    session.flush()
    ensure_theory_set(session, deployment)
    return deployment, _refresh_deployment(session, deployment.id)


def set_deployment_threshold(session: Session, deployment_id: int, threshold: float | None) -> RefreshSummary:
    """A deployment's own gap threshold (None: use the global one); diagnoses are recomputed with it."""
    if threshold is not None and not 0 < threshold <= 1:
        raise ProfileError("gap_threshold: must be in (0, 1]")
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        raise ProfileError(f"deployment: no deployment with id {deployment_id}")
    deployment.gap_threshold = threshold
    session.flush()
    return _refresh_deployment(session, deployment_id)


def set_global_threshold(session: Session, threshold: float) -> RefreshSummary:
    """The gap threshold of every deployment without its own; diagnoses that depend on it are recomputed."""
    try:
        set_gap_threshold(session, threshold)
    except ValueError as exc:
        raise ProfileError(f"gap_threshold: {exc}") from None
    session.flush()
    return refresh(session)


def apply_calibration_and_refresh(
    session: Session, report: CalibrationReport
) -> tuple[ParameterSet, RefreshSummary]:
    """Save a calibration fit as the deployment's active calibrated parameter set, then predict with it:
    every benchmark of the deployment gets a `calibrated` prediction and gap next to the theory one."""
    pset = apply_calibration(session, report)
    return pset, _refresh_deployment(session, report.deployment_id)


def parameter_sets_frame(session: Session) -> pd.DataFrame:
    """Every parameter set, newest version of each deployment first, with its fit quality when calibrated."""
    query = (
        select(
            Deployment.name.label("deployment"),
            ParameterSet.version,
            ParameterSet.source,
            ParameterSet.is_active,
            ParameterSet.draft_step_ms,
            ParameterSet.round_overhead_ms,
            ParameterSet.verify_growth_compute,
            ParameterSet.verify_growth_comm,
            ParameterSet.acc_to_acceptance,
            ParameterSet.fit,
            ParameterSet.created_at,
        )
        .join(Deployment, ParameterSet.deployment_id == Deployment.id)
        .order_by(Deployment.name, ParameterSet.version.desc())
    )
    rows = [dict(row) for row in session.execute(query).mappings()]
    for row in rows:
        fit = row.pop("fit") or {}
        row["benchmarks"] = fit.get("n_benchmarks")
        row["cv_median_error"] = fit.get("loo_median_abs_rel_error")
    columns = ["deployment", "version", "source", "is_active", "draft_step_ms", "round_overhead_ms",
               "verify_growth_compute", "verify_growth_comm", "acc_to_acceptance", "benchmarks", "cv_median_error",
               "created_at"]
    return pd.DataFrame(rows, columns=columns)
