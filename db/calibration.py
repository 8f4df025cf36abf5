"""A deployment's calibration as the store keeps it: the benchmarks and theory set a calibration reads,
and a calibration report saved as the deployment's next calibrated parameter set (never an overwrite)."""

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel.calibration_report import CalibrationBenchmark, CalibrationReport
from specdash.costmodel.domain import PredictionSource
from specdash.db.changes import record_change
from specdash.db.models import (
    BENCHMARK_SETTING,
    Benchmark,
    Checkpoint,
    Deployment,
    ParameterSet,
    Run,
)
from specdash.db.parameters import active_sets, next_version

_CALIBRATION_COLUMNS = (
    Benchmark.id,
    Benchmark.checkpoint_id,
    *BENCHMARK_SETTING,
    Benchmark.decode_tps,
    Benchmark.accept_length,
    Benchmark.draft_hidden_size,
    Benchmark.superseded_by_id,
    Run.speculative_algorithm.label("drafter_algorithm"),
    Run.hidden_size.label("drafter_hidden_size"),
    Run.id.label("run_id"),
    Run.name.label("run_name"),
)


def calibration_benchmarks(session: Session, deployment_id: int) -> list[CalibrationBenchmark]:
    """The deployment's speculative benchmarks with their drafters, oldest first, as calibration screens
    them."""
    # plain columns, not ORM objects: a deployment may hold tens of thousands of benchmarks
    rows = session.execute(
        select(*_CALIBRATION_COLUMNS)
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Checkpoint.run)
        .where(Benchmark.deployment_id == deployment_id, Benchmark.speculative_algorithm.is_not(None))
        .order_by(Benchmark.id)
    )
    return [CalibrationBenchmark(*row) for row in rows]


def fit_summary(report: CalibrationReport) -> dict:
    """What a calibrated parameter set records about how it was obtained (its `fit`)."""
    return report.calibrated_set().to_json()


def apply_calibration(session: Session, report: CalibrationReport) -> ParameterSet:
    """Save the fit as the deployment's next parameter-set version (source `calibrated`, active); older
    calibrated sets of the deployment become inactive. Run refresh() afterwards for new predictions."""
    replaced = []
    for older in active_sets(session, report.deployment_id, PredictionSource.CALIBRATED):
        older.is_active = False
        replaced.append(older.version)
    params = report.params
    pset = ParameterSet(
        deployment_id=report.deployment_id,
        version=next_version(session, report.deployment_id),
        source=PredictionSource.CALIBRATED,
        baseline_tps=report.baseline_tps,
        comm_fraction=report.comm_fraction,
        draft_step_ms=params.draft_step_ms,
        draft_branch_ms=params.draft_branch_ms,
        round_overhead_ms=params.round_overhead_ms,
        verify_growth_compute=params.verify_growth,
        verify_growth_comm=params.verify_growth,
        acc_to_acceptance=params.acc_to_acceptance,
        fit=fit_summary(report),
        is_active=True,
        note=(
            f"fitted to {report.n_benchmarks} benchmark(s); {report.fit.cross_validation} median "
            f"abs error {report.loo_median_abs_rel_error:.1%}"
        ),
    )
    session.add(pset)
    session.flush()
    record_change(
        session,
        "calibrate",
        "parameter_set",
        session.get_one(Deployment, report.deployment_id).name,
        "calibrated version",
        max(replaced) if replaced else None,
        pset.version,
        note=pset.note,
    )
    return pset
