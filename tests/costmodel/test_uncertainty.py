"""Error bands: every stored prediction carries one, from held-out residuals or the prior's spread."""

import json
import math

import pytest
from sqlalchemy import select, text

from specdash.answers.calibrate import calibrate
from specdash.answers.refresh import refresh
from specdash.costmodel.uncertainty import (
    MIN_BAND,
    PRIOR_ACCEPTANCE_BAND,
    PRIOR_PSEUDO_COUNT,
    PRIOR_ROUND_BAND,
    error_band,
    prior_error_band,
    quantile,
    within_band,
)
from specdash.db.calibration import apply_calibration
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Prediction
from specdash.db.schema import downgrade, upgrade


def test_quantile_interpolates_like_numpy():
    # 10 values 0.01..0.10: position 0.9 * 9 = 8.1 -> 0.09 + 0.1 * (0.10 - 0.09)
    assert quantile([i / 100 for i in range(10, 0, -1)], 0.9) == pytest.approx(0.091)
    assert quantile([0.5], 0.9) == 0.5


def test_prior_band_widens_when_tau_comes_from_training():
    assert prior_error_band("measured") == PRIOR_ROUND_BAND
    assert prior_error_band("training") == pytest.approx(
        math.sqrt(PRIOR_ROUND_BAND**2 + PRIOR_ACCEPTANCE_BAND**2)
    )
    assert error_band(None) == PRIOR_ROUND_BAND and error_band([]) == PRIOR_ROUND_BAND


def test_held_out_residuals_shrink_toward_the_prior_when_few():
    # 20 residuals, |e| = 0.005 .. 0.100: the 0.9 quantile is at position 17.1 -> 0.0905
    errors = [(-1) ** i * (i + 1) * 0.005 for i in range(20)]
    observed = 0.09 + 0.1 * 0.005
    n0 = PRIOR_PSEUDO_COUNT
    assert error_band(errors) == pytest.approx((20 * observed + n0 * PRIOR_ROUND_BAND) / (20 + n0))
    # the more residuals, the closer to their own quantile
    assert abs(error_band(errors * 10) - observed) < abs(error_band(errors) - observed)
    # tiny residuals never give a band below the floor
    assert error_band([1e-4] * 1000) == MIN_BAND


def test_within_band():
    assert within_band(109.0, 100.0, 0.1) and within_band(91.0, 100.0, 0.1)
    assert not within_band(111.0, 100.0, 0.1)


def test_every_builtin_prediction_of_the_demo_has_a_band(demo_url):
    engine = make_engine(demo_url)
    with reading(engine) as session:
        rows = session.execute(
            select(Prediction.source, Prediction.accept_length_source, Prediction.error_band)
        ).all()
    builtin = [r for r in rows if r.source == "theory"]
    assert builtin and all(r.error_band == prior_error_band(r.accept_length_source) for r in builtin)
    assert all(r.error_band is None for r in rows if r.source not in ("theory", "calibrated"))


def test_a_calibrated_prediction_takes_its_fits_held_out_band(demo_url):
    engine = make_engine(demo_url)
    with transaction(engine) as session:
        (report,) = calibrate(session, deployment_id=None)[:1]
        pset = apply_calibration(session, report)
        refresh(session)
        expected = error_band(report.fit.cv_errors)
        assert pset.fit["error_band"] == pytest.approx(expected)
        bands = session.scalars(
            select(Prediction.error_band).where(Prediction.parameter_set_id == pset.id)
        ).all()
    # nine PCIe benchmarks with held-out errors of a few %: narrower than the prior, never below the floor
    assert bands and all(b == pytest.approx(expected) for b in bands)
    assert MIN_BAND <= expected < PRIOR_ROUND_BAND


def test_predictions_survive_the_upgrade_that_adds_the_band(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    upgrade(engine, "0001")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO deployment (id, name, comm_fraction, draft_step_ms, round_overhead_ms, "
                "verify_growth_compute, verify_growth_comm, is_demo, created_at) "
                "VALUES (1, 'd', 0, 0, 0, 0, 0, 0, '2026-01-01')"
            )
        )
        connection.execute(
            text(
                "INSERT INTO run (id, name, status, is_demo, created_at) "
                "VALUES (1, 'r', 'finished', 0, '2026-01-01')"
            )
        )
        connection.execute(
            text("INSERT INTO checkpoint (id, run_id, name, created_at) VALUES (1, 1, 'c', '2026-01-01')")
        )
        connection.execute(
            text(
                "INSERT INTO prediction (id, checkpoint_id, deployment_id, num_steps, topk, "
                "num_draft_tokens, concurrency, dataset, source, predicted_tps, extrapolated, "
                "created_at) VALUES (1, 1, 1, 3, 1, 4, 1, '', 'my-sim', 150.0, 0, '2026-01-01')"
            )
        )
    upgrade(engine, "0002")
    with engine.connect() as connection:
        row = connection.execute(text("SELECT source, predicted_tps, error_band FROM prediction")).one()
    assert tuple(row) == ("my-sim", 150.0, None)
    downgrade(engine, "0001")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT predicted_tps FROM prediction")).scalar() == 150.0


def test_gaps_json_carries_each_predictions_band(invoke, demo_url):
    rows = json.loads(
        invoke(demo_url, "gaps", "--status", "all", "--threshold", "0", "--format", "json").output
    )
    theory = [r for r in rows if r["source"] == "theory"]
    # the demo's theory predictions use training accuracies: the prior band with the acceptance spread
    assert theory and all(r["error_band"] == pytest.approx(prior_error_band("training")) for r in theory)
    assert all(r["error_band"] is None for r in rows if r["source"] not in ("theory", "calibrated"))


def test_repeat_noise_is_the_spread_of_repeats_shrunk_toward_the_floor():
    from specdash.costmodel.uncertainty import MIN_BAND, PRIOR_PSEUDO_COUNT, repeat_noise

    # 64.5 and 63.7 tok/s: mean 64.1, each 0.4 / 64.1 off; two deviations and five pseudo ones at 2 %
    off = 0.4 / 64.1
    assert repeat_noise([[64.5, 63.7]]) == pytest.approx((2 * off + PRIOR_PSEUDO_COUNT * MIN_BAND) / 7)
    # a lone measurement is no repeat; a group's own mean, not the pool's
    assert repeat_noise([[50.0], [10.0]]) is None
    assert repeat_noise([[10.0, 10.0], [100.0, 100.0]]) == pytest.approx(5 * MIN_BAND / 9)


def test_a_band_is_never_narrower_than_the_noise_of_repeats():
    from specdash.costmodel.uncertainty import with_noise

    assert with_noise(0.05, 0.12) == 0.12
    assert with_noise(0.40, 0.12) == 0.40
    assert with_noise(0.05, None) == 0.05
