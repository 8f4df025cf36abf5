"""Edits made from the Settings page: deployment cost profiles, gap thresholds and calibrated parameter
sets (answers/edits.py refreshes the predictions and gaps each changes); and the parameter sets to list."""

from datetime import datetime
from typing import NamedTuple

from pydantic import ValidationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from specdash.costmodel.calibration_report import CalibrationReport
from specdash.costmodel.domain import PredictionSource
from specdash.db.calibration import apply_calibration
from specdash.db.changes import record_change
from specdash.db.models import Benchmark, Deployment, ParameterSet
from specdash.db.parameters import PROFILE_FIELDS as COST_FIELDS
from specdash.db.parameters import (
    active_sets,
    ensure_theory_set,
    next_version,
)
from specdash.db.records import DeploymentRecord
from specdash.db.settings import get_gap_threshold, set_gap_threshold

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


def deployment_benchmarks(session: Session, deployment_ids: list[int]) -> list[int]:
    """The ids of these deployments' benchmarks: what an edit of their profiles or thresholds changes."""
    return list(session.scalars(select(Benchmark.id).where(Benchmark.deployment_id.in_(deployment_ids))))


def save_deployment(session: Session, values: dict, deployment_id: int | None = None) -> Deployment:
    """Create a deployment (deployment_id None) or edit one; a changed cost profile becomes a new theory
    parameter set. Raises ProfileError."""
    record = _validated(values)
    clash = session.scalar(select(Deployment.id).where(Deployment.name == record.name))
    if clash is not None and clash != deployment_id:
        raise ProfileError(f"name: a deployment named {record.name!r} already exists")
    if deployment_id is None:
        deployment = Deployment(name=record.name)
        session.add(deployment)
        record_change(session, "profile", "deployment", record.name, note="created")
    else:
        found = session.get(Deployment, deployment_id)
        if found is None:
            raise ProfileError(f"deployment: no deployment with id {deployment_id}")
        deployment = found
    for name in PROFILE_FIELDS:
        if deployment_id is not None and not _same(getattr(deployment, name), getattr(record, name)):
            _set_recorded(session, deployment, name, getattr(record, name))
        else:
            setattr(deployment, name, getattr(record, name))
    session.flush()
    ensure_theory_set(session, deployment)
    return deployment


def _set_recorded(session: Session, deployment: Deployment, name: str, value) -> None:
    """Set a profile field, with the value it replaces in the change history."""
    record_change(session, "profile", "deployment", deployment.name, name, getattr(deployment, name), value)
    setattr(deployment, name, value)


def profile_values(session: Session, deployment_id: int) -> dict:
    """The deployment's stored profile, field by field, as the Settings form is pre-filled with it."""
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        raise ProfileError(f"deployment: no deployment with id {deployment_id}")
    return {name: getattr(deployment, name) for name in PROFILE_FIELDS}


def profile_revision(session: Session, deployment_id: int) -> int:
    """The deployment's latest parameter-set version (0 before the first): it changes with every saved
    profile, restore or calibration, so a form keyed on it is pre-filled afresh."""
    return session.execute(
        select(func.coalesce(func.max(ParameterSet.version), 0)).where(
            ParameterSet.deployment_id == deployment_id
        )
    ).scalar_one()


def _same(old, new) -> bool:
    if isinstance(old, float) and isinstance(new, int | float):
        return abs(old - new) <= 1e-12 * max(1.0, abs(old))
    return old == new


def edit_deployment(
    session: Session, deployment_id: int, shown: dict, submitted: dict
) -> tuple[Deployment, list[str]]:
    """Apply only the fields the user changed: `shown` is what the form was pre-filled with, `submitted`
    what came back. Untouched fields keep their stored values whatever the form's widgets round them to;
    a changed cost field makes a new theory parameter-set version. Returns the fields changed.
    Raises ProfileError."""
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        raise ProfileError(f"deployment: no deployment with id {deployment_id}")
    changed = {
        name: submitted[name]
        for name in PROFILE_FIELDS
        if name in submitted and not _same(shown.get(name), submitted[name])
    }
    if not changed:
        return deployment, []
    merged = {**{name: getattr(deployment, name) for name in PROFILE_FIELDS}, **changed}
    record = _validated(merged)
    clash = session.scalar(select(Deployment.id).where(Deployment.name == record.name))
    if clash is not None and clash != deployment_id:
        raise ProfileError(f"name: a deployment named {record.name!r} already exists")
    for name in changed:
        _set_recorded(session, deployment, name, getattr(record, name))
    session.flush()
    ensure_theory_set(session, deployment)
    return deployment, sorted(changed)


def restore_parameter_set(session: Session, parameter_set_id: int) -> ParameterSet:
    """Make an earlier parameter set current again as a new version (the history keeps every version):
    a theory set's values go back into the deployment's profile; a calibrated set becomes the active
    calibrated one."""
    old = session.get(ParameterSet, parameter_set_id)
    if old is None:
        raise ProfileError(f"parameter_set: no parameter set with id {parameter_set_id}")
    deployment = old.deployment
    if old.source == PredictionSource.THEORY:
        for name in COST_FIELDS:
            setattr(deployment, name, getattr(old, name))
        session.flush()
        pset = ensure_theory_set(session, deployment)
        if pset.id != old.id:
            pset.note = f"restored from v{old.version}"
    else:
        for other in active_sets(session, deployment.id, old.source):
            other.is_active = False
        pset = ParameterSet(
            deployment_id=deployment.id,
            version=next_version(session, deployment.id),
            source=old.source,
            draft_branch_ms=old.draft_branch_ms,
            acc_to_acceptance=old.acc_to_acceptance,
            fit=old.fit,
            is_active=True,
            note=f"restored from v{old.version}",
            **{name: getattr(old, name) for name in COST_FIELDS},
        )
        session.add(pset)
    session.flush()
    record_change(
        session,
        "restore",
        "parameter_set",
        deployment.name,
        f"{old.source} version",
        old.version,
        pset.version,
        note=f"v{old.version} made current again as v{pset.version}",
    )
    return pset


def set_deployment_threshold(session: Session, deployment_id: int, threshold: float | None) -> None:
    """A deployment's own gap threshold (None: use the global one)."""
    if threshold is not None and not 0 < threshold <= 1:
        raise ProfileError("gap_threshold: must be in (0, 1]")
    deployment = session.get(Deployment, deployment_id)
    if deployment is None:
        raise ProfileError(f"deployment: no deployment with id {deployment_id}")
    if deployment.gap_threshold != threshold:
        record_change(
            session,
            "threshold",
            "deployment",
            deployment.name,
            "gap_threshold",
            deployment.gap_threshold,
            threshold,
        )
    deployment.gap_threshold = threshold
    session.flush()


def set_global_threshold(session: Session, threshold: float) -> None:
    """The gap threshold of every deployment without its own."""
    before = get_gap_threshold(session)
    try:
        set_gap_threshold(session, threshold)
    except ValueError as exc:
        raise ProfileError(f"gap_threshold: {exc}") from None
    if before != threshold:
        record_change(session, "threshold", "setting", "global", "gap_threshold", before, threshold)
    session.flush()


def applied_version(session: Session, report: CalibrationReport) -> int | None:
    """The version of the deployment's active calibrated set when it already holds this fit (same
    benchmarks, same parameters), so the page does not offer it again."""
    active = active_sets(session, report.deployment_id, PredictionSource.CALIBRATED)
    params = report.params
    wanted = (
        params.draft_step_ms,
        params.draft_branch_ms,
        params.round_overhead_ms,
        params.verify_growth,
        params.verify_growth,
        params.acc_to_acceptance,
    )
    for pset in active:
        stored = (
            pset.draft_step_ms,
            pset.draft_branch_ms or 0.0,
            pset.round_overhead_ms,
            pset.verify_growth_compute,
            pset.verify_growth_comm,
            pset.acc_to_acceptance,
        )
        same_benchmarks = sorted((pset.fit or {}).get("benchmark_ids", [])) == sorted(report.benchmark_ids)
        if same_benchmarks and all(
            a is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a))
            for a, b in zip(stored, wanted, strict=True)
        ):
            return pset.version
    return None


def apply_calibrations(session: Session, reports: list[CalibrationReport]) -> list[ParameterSet]:
    """Apply every fit not applied yet, in one transaction."""
    return [apply_calibration(session, r) for r in reports if applied_version(session, r) is None]


class ParameterSetEntry(NamedTuple):
    """A parameter set as Settings lists it: its cost parameters and, when calibrated, how well it fits."""

    id: int
    deployment_id: int
    deployment: str
    version: int
    source: str
    is_active: bool
    baseline_tps: float | None
    comm_fraction: float | None
    draft_step_ms: float | None
    round_overhead_ms: float | None
    verify_growth_compute: float | None
    verify_growth_comm: float | None
    acc_to_acceptance: float
    benchmarks: int | None  # the calibration's
    cv_median_error: float | None  # leave-one-out median |relative error| of the fit
    note: str | None
    created_at: datetime


def parameter_sets(session: Session) -> list[ParameterSetEntry]:
    """Every parameter set, newest version of each deployment first, with its fit quality when calibrated."""
    query = (
        select(
            ParameterSet.id,
            ParameterSet.deployment_id,
            Deployment.name.label("deployment"),
            ParameterSet.version,
            ParameterSet.source,
            ParameterSet.is_active,
            ParameterSet.baseline_tps,
            ParameterSet.comm_fraction,
            ParameterSet.draft_step_ms,
            ParameterSet.round_overhead_ms,
            ParameterSet.verify_growth_compute,
            ParameterSet.verify_growth_comm,
            ParameterSet.acc_to_acceptance,
            ParameterSet.fit,
            ParameterSet.note,
            ParameterSet.created_at,
        )
        .join(Deployment, ParameterSet.deployment_id == Deployment.id)
        .order_by(Deployment.name, ParameterSet.version.desc())
    )
    entries = []
    for *numbers, fit, note, created_at in session.connection().execute(query):
        fit = fit or {}
        quality = (fit.get("n_benchmarks"), fit.get("loo_median_abs_rel_error"))
        entries.append(ParameterSetEntry._make((*numbers, *quality, note, created_at)))
    return entries
