"""Load levels and shared calibration: one deployment spans its loads (SpecBundle included, with the migration
for databases that had one deployment per batch size), predictions at a load without a baseline, each
drafter's draft cost shrunk toward its prior, and a fit at batch 1 carried to batch 8."""

import json

import numpy as np
import pytest
from sqlalchemy import select, text

from specdash.costmodel.calibration import CalibrationObservation, FittedParams, fit_calibration
from specdash.costmodel.priors import TargetArchitecture, verify_growth
from specdash.costmodel.uncertainty import PRIOR_ROUND_BAND
from specdash.db.engine import make_engine, reading
from specdash.db.models import Alert, Deployment, Prediction
from specdash.db.schema import upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource


def test_predictions_at_a_load_without_a_baseline_interpolate_it(engine):
    document = {
        "specdash": 1,
        "deployments": [
            {"name": "lab", "gpu": "H100", "tp_size": 1, "target_model": "Llama-3.1-8B-Instruct"}
        ],
        "runs": [{"name": "r", "speculative_algorithm": "EAGLE3"}],
        "checkpoints": [{"run": "r", "name": "c"}],
        "benchmarks": [
            {"deployment": "lab", "decode_tps": 100.0, "concurrency": 1},
            {"deployment": "lab", "decode_tps": 80.0, "concurrency": 8},
            {
                "deployment": "lab",
                "run": "r",
                "checkpoint": "c",
                "speculative_algorithm": "EAGLE3",
                "num_steps": 3,
                "topk": 1,
                "num_draft_tokens": 4,
                "decode_tps": 150.0,
                "accept_length": 2.5,
                "concurrency": 4,
            },
        ],
    }
    assert ingest(engine, UploadSource("lab.json", json.dumps(document).encode())).ok
    with reading(engine) as session:
        (prediction,) = session.scalars(select(Prediction).where(Prediction.source == "theory")).all()
        # no baseline at batch 4: the step interpolated in log-log between batch 1 (10 ms) and 8 (12.5 ms)
        assert 1000 / prediction.baseline_tps == pytest.approx(10 ** (1 / 3) * 12.5 ** (2 / 3))
        assert prediction.concurrency == 4 and prediction.error_band == pytest.approx(
            PRIOR_ROUND_BAND
        )  # the priors' band, tau measured


def _observations(truth_draft: dict[str, float], overhead: float, growth: float, shapes=(1.0,), n_each=6):
    """Synthetic rounds of several drafters on one deployment: T = T_base (1 + b g (N-1)) + K d_j + o."""
    out = []
    for drafter, draft in truth_draft.items():
        for i in range(n_each):
            steps = 3 + (i % 3) * 2
            verified = steps + 1 + 4 * ((i // 3) % 2)  # some rounds verify more than K + 1 (trees)
            base = 10.0 * (1 + 0.05 * (i % 2))
            shape = shapes[i % len(shapes)]
            tau = 2.0 + 0.2 * steps
            round_ms = base * (1 + growth * shape * (verified - 1)) + steps * draft + overhead
            out.append(
                CalibrationObservation(
                    steps,
                    1,
                    verified,
                    1000 * tau / round_ms,
                    1000 / base,
                    tau,
                    drafter=drafter,
                    growth_shape=shape,
                    label=f"{drafter} {i}",
                )
            )
    return out


def test_each_drafter_gets_its_own_draft_cost_and_shares_the_rest():
    truth = {"eagle1": 0.9, "eagle3": 1.5}
    observations = _observations(truth, overhead=1.0, growth=0.02)
    prior = FittedParams(
        draft_step_ms=1.0,
        round_overhead_ms=1.0,
        verify_growth=0.02,
        draft_step_ms_by_drafter=(("eagle1", 1.0), ("eagle3", 1.0)),
    )
    fit = fit_calibration(observations, prior)
    fitted = dict(fit.params.draft_step_ms_by_drafter)
    # each drafter's cost lands within a few % of its truth
    assert fitted["eagle1"] == pytest.approx(0.9, rel=0.1) and fitted["eagle3"] == pytest.approx(1.5, rel=0.1)
    assert fit.loo_median_abs_rel_error < 0.01
    pooled = fit_calibration(
        [CalibrationObservation(**{**vars(o), "drafter": ""}) for o in observations], prior
    )
    assert pooled.loo_median_abs_rel_error > 3 * fit.loo_median_abs_rel_error


def test_a_drafter_with_two_points_stays_near_its_prior():
    observations = _observations({"main": 1.0}, overhead=1.0, growth=0.02, n_each=12)
    # two wild benchmarks of a second drafter: its draft cost would be 5 ms on its own
    observations += _observations({"rare": 5.0}, overhead=1.0, growth=0.02, n_each=2)
    prior = FittedParams(
        draft_step_ms=1.0,
        round_overhead_ms=1.0,
        verify_growth=0.02,
        draft_step_ms_by_drafter=(("main", 1.0), ("rare", 1.0)),
    )
    fit = fit_calibration(observations, prior)
    fitted = dict(fit.params.draft_step_ms_by_drafter)
    assert 1.0 < fitted["rare"] < 5.0  # moved toward its data, not beyond
    assert fitted["main"] == pytest.approx(1.0, rel=0.05)  # the shared costs are not dragged along
    assert fit.params.round_overhead_ms == pytest.approx(1.0, abs=0.3)


def test_a_fit_at_batch_1_predicts_batch_8_through_the_growth_shape():
    """Verify growth per token differs between loads by the architecture's shape g; a fit at batch 1 carries
    to batch 8 when the observations say what g is at each."""
    arch, knee = TargetArchitecture(235, 22, 128, 8), 206
    g = {b: verify_growth(arch, knee, b, 4) / verify_growth(arch, knee, 1, 4) for b in (1, 8)}
    # 8 x 4 tokens read 112 of 128 experts where 8 read 52: each extra verified token costs more than at batch 1
    assert g[8] > 1.2
    truth = dict(draft=0.8, overhead=1.5, growth=0.05)

    def rows(batch):
        return [
            o
            for o in _observations(
                {"d": truth["draft"]}, truth["overhead"], truth["growth"], shapes=(g[batch],), n_each=9
            )
        ]

    fit = fit_calibration(rows(1), FittedParams(draft_step_ms=0.8, round_overhead_ms=1.5, verify_growth=0.05))
    from specdash.costmodel.calibration import predict_observations

    at_8 = rows(8)
    predicted = np.array(predict_observations(fit.params, at_8))
    measured = np.array([o.measured_tps for o in at_8])
    assert np.median(np.abs(predicted / measured - 1)) < 0.01


def test_specbundle_deployments_per_batch_size_merge_on_upgrade(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    upgrade(engine, "0006")
    with engine.begin() as c:
        for i, name in (
            (1, "SpecBundle: Qwen3-8B, bs 1"),
            (2, "SpecBundle: Qwen3-8B, bs 8"),
            (3, "lab"),
            (4, "story"),
        ):
            costs = "0.5, 0.64, 0, 0, 0" if name == "story" else "0, 0, 0, 0, 0"
            c.execute(
                text(
                    "INSERT INTO deployment (id, name, comm_fraction, draft_step_ms, round_overhead_ms, "
                    f"verify_growth_compute, verify_growth_comm, is_demo, created_at) VALUES ({i}, "
                    f"'{name}', {costs}, 0, '2026-01-01')"
                )
            )
        for i in (1, 2):
            c.execute(
                text(
                    "INSERT INTO parameter_set (id, deployment_id, version, source, comm_fraction, "
                    "draft_step_ms, round_overhead_ms, verify_growth_compute, verify_growth_comm, "
                    f"draft_branch_ms, acc_to_acceptance, is_active, created_at) VALUES ({i}, {i}, 1, "
                    "'theory', 0, 0, 0, 0, 0, 0, 1, 1, '2026-01-01')"
                )
            )
        c.execute(
            text(
                "INSERT INTO run (id, name, status, is_demo, created_at) VALUES (1, 'r', 'finished', 0, "
                "'2026-01-01')"
            )
        )
        c.execute(
            text(
                "INSERT INTO checkpoint (id, run_id, name, created_at) VALUES (1, 1, 'published', "
                "'2026-01-01')"
            )
        )
        for i, (deployment, batch) in enumerate(((1, 1), (2, 8)), start=1):
            c.execute(
                text(
                    "INSERT INTO benchmark (id, record_key, checkpoint_id, deployment_id, "
                    "speculative_algorithm, num_steps, topk, num_draft_tokens, concurrency, decode_tps, "
                    f"source_format, created_at) VALUES ({i}, 'k{i}', 1, {deployment}, 'EAGLE3', 3, 1, 4, "
                    f"{batch}, 150, 'specbundle', '2026-01-01')"
                )
            )
            c.execute(
                text(
                    "INSERT INTO prediction (id, checkpoint_id, deployment_id, num_steps, topk, "
                    "num_draft_tokens, concurrency, dataset, source, parameter_set_id, predicted_tps, "
                    f"extrapolated, created_at) VALUES ({i}, 1, {deployment}, 3, 1, 4, {batch}, '', 'theory', "
                    f"{deployment}, 160, 0, '2026-01-01')"
                )
            )
            c.execute(
                text(
                    "INSERT INTO gap (id, benchmark_id, prediction_id, gap, measured_tps, predicted_tps, "
                    f"diagnoses, status, note, updated_at) VALUES ({i}, {i}, {i}, 0.06, 150, 160, '[]', "
                    f"'investigating', 'checking bs {batch}', '2026-01-01')"
                )
            )
    upgrade(engine)
    with reading(engine) as session:
        names = dict(session.execute(select(Deployment.id, Deployment.name)).all())
        assert names == {1: "SpecBundle: Qwen3-8B", 3: "lab", 4: "story"}
        rows = session.execute(text("SELECT id, deployment_id, concurrency FROM benchmark ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(1, 1, 1), (2, 1, 8)]
        predictions = session.execute(
            select(Prediction.deployment_id, Prediction.concurrency, Prediction.parameter_set_id).order_by(
                Prediction.id
            )
        ).all()
        assert [tuple(p) for p in predictions] == [(1, 1, 1), (1, 8, None)]  # recomputed at the next refresh
        # the investigations (the benchmarks' alerts since 0008) survive the merge
        assert [
            (a.benchmark_id, a.status, a.note)
            for a in session.scalars(select(Alert).order_by(Alert.benchmark_id))
        ] == [(1, "investigating", "checking bs 1"), (2, "investigating", "checking bs 8")]
        lab = session.get(Deployment, 3)
        story = session.get(Deployment, 4)
        # stated nothing: the priors; stated something: its numbers, zeros included
        assert (lab.comm_fraction, lab.draft_step_ms, lab.round_overhead_ms) == (None, None, None)
        assert (story.comm_fraction, story.draft_step_ms, story.round_overhead_ms) == (0.5, 0.64, 0.0)
