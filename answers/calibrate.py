"""Calibrating deployments: each one's benchmarks, baselines and theory set read from the store, and its
fit decided by answers/calibration.py (saving a report is the store's: db.calibration.apply_calibration)."""

from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.answers.calibration import CalibrationInputs, calibration_report
from specdash.answers.estimates import estimated_baselines
from specdash.costmodel.calibration_report import CalibrationReport, SkippedDeployment
from specdash.costmodel.domain import PredictionSource
from specdash.costmodel.estimated import BaselineEstimate
from specdash.db.acceptance import checkpoint_rates
from specdash.db.calibration import calibration_benchmarks
from specdash.db.models import Deployment
from specdash.db.parameters import (
    Baselines,
    cost_set,
    deployment_facts,
    latest_active_set,
    load_baselines,
    profile_costs,
)


def calibration_inputs(
    session: Session, deployment: Deployment, baselines: Baselines, estimates: Mapping[int, BaselineEstimate]
) -> CalibrationInputs:
    """What the deployment's calibration reads: its theory set (else profile), benchmarks, training rates,
    measured baselines and, with no baseline of any kind, its estimated ones."""
    theory = latest_active_set(session, deployment.id, PredictionSource.THEORY)
    profile_baseline = theory.baseline_tps if theory else deployment.baseline_tps
    facts = deployment_facts(deployment)
    benchmarks = calibration_benchmarks(session, deployment.id)

    def measured(concurrency: int, dataset: str | None) -> float | None:
        return baselines.choose(
            deployment.id, concurrency, dataset, facts, profile_tps=profile_baseline, extrapolate=False
        )

    def at_reference(concurrency: int, dataset: str | None) -> float | None:
        return baselines.choose(deployment.id, concurrency, dataset, facts)

    return CalibrationInputs(
        deployment_id=deployment.id,
        deployment_name=deployment.name,
        facts=facts,
        costs=cost_set(theory) if theory else profile_costs(deployment),
        theory_set_id=theory.id if theory else None,
        profile_baseline_tps=profile_baseline,
        benchmarks=benchmarks,
        rates=checkpoint_rates(session, sorted({b.checkpoint_id for b in benchmarks if b.checkpoint_id})),
        measured_baseline=measured,
        reference_baseline=at_reference,
        measured_loads=baselines.measured_loads(deployment.id),
        estimate=estimates.get(deployment.id) if not profile_baseline else None,
    )


def calibrate_all(
    session: Session, deployment_id: int | None = None
) -> tuple[list[CalibrationReport], list[SkippedDeployment]]:
    """Fit every deployment (or the one given) that has enough trusted benchmarks; say why the others
    were skipped."""
    query = select(Deployment).order_by(Deployment.name)
    if deployment_id is not None:
        query = query.where(Deployment.id == deployment_id)
    baselines = load_baselines(session, deployment_id)
    estimates = estimated_baselines(session, None if deployment_id is None else [deployment_id])
    reports, skipped = [], []
    for deployment in session.scalars(query):
        outcome = calibration_report(calibration_inputs(session, deployment, baselines, estimates))
        if isinstance(outcome, SkippedDeployment):
            skipped.append(outcome)
        else:
            reports.append(outcome)
    return reports, skipped


def calibrate(session: Session, deployment_id: int | None = None) -> list[CalibrationReport]:
    """One report per deployment with enough trusted benchmarks (see calibrate_all for the others)."""
    return calibrate_all(session, deployment_id)[0]
