"""A deployment's load observations and the decisions over its load fit, without a database: typed rows
in, observations, keys and refit decisions out (numbers worked out by hand)."""

import pytest

from specdash.costmodel.load_observations import (
    REFIT_SHARE,
    StoredFit,
    baseline_observations,
    benchmark_setting,
    estimate_deployment,
    fitted_observations,
    median_observations,
    observed_tau,
    refit_needed,
)
from specdash.costmodel.observations import CalibrationObservation
from specdash.costmodel.priors import DeploymentFacts


def test_median_observations_take_one_per_drafter_setting_and_load():
    key = ("7", 3, 1, 4, 8)
    rows = [(key, 100.0, 2.0), (key, 120.0, 3.0), (key, 110.0, 2.5), (("7", 3, 1, 4, 0), 90.0, 2.2)]
    at_8, at_0 = median_observations(rows)
    assert (at_8.concurrency, at_8.steps, at_8.topk, at_8.draft_tokens, at_8.drafter) == (8.0, 3, 1, 4, "7")
    assert at_8.measured_tps == 110.0 and at_8.accept_length == 2.5
    assert at_8.label == "7 K=3 B=8"
    assert at_0.concurrency == 1.0  # a load of 0 is read as batch 1


def test_a_setting_needs_a_depth_and_a_chain_verifies_one_more_token():
    assert benchmark_setting(3, None, None) == (3, 1, 4)
    assert benchmark_setting(None, None, None) is None


@pytest.mark.parametrize(
    "tau,trained,expected",
    [
        (2.0, None, 2.0),
        (0.5, None, None),  # below 1: not an accept length
        (None, None, None),
        # chained from the training rates: 1 + 0.8 + 0.8 * 0.6 + 0.8 * 0.6 * 0.4
        (None, (0.8, 0.6, 0.4), 2.472),
    ],
)
def test_observed_tau_is_measured_else_chained(tau, trained, expected):
    got = observed_tau(tau, trained, (3, 1, 4))
    assert got == (pytest.approx(expected) if expected is not None else None)


def test_baseline_levels_are_rounds_of_depth_zero_in_load_order():
    low, high = baseline_observations({8: 500.0, 1: 100.0})
    assert (low.concurrency, low.steps, low.measured_tps, low.label) == (1.0, 0, 100.0, "baseline B=1")
    assert (high.concurrency, high.measured_tps) == (8.0, 500.0)


def test_fitted_observations_keep_a_measured_tau_else_one_from_the_rates():
    def obs(tau, rates):
        return CalibrationObservation(
            steps=3,
            topk=1,
            draft_tokens=4,
            measured_tps=200.0,
            baseline_tps=100.0,
            measured_accept_length=tau,
            training_rates=rates,
            drafter="7",
        )

    measured, chained = fitted_observations([obs(2.5, None), obs(None, (0.8, 0.6, 0.4))], [1, 8], 1.0)
    assert (measured.concurrency, measured.accept_length) == (1.0, 2.5)
    assert chained.concurrency == 8.0 and chained.accept_length == pytest.approx(2.472)


@pytest.mark.parametrize(
    "stored,key,benchmarks,expected",
    [
        (None, "k", 10, True),
        (StoredFit("other", 100, {}), "k", 100, True),
        (StoredFit("k", 100, {}), "k", 100, False),
        (StoredFit("k", 100, {}), "k", 110, False),  # exactly REFIT_SHARE new: kept
        (StoredFit("k", 100, {}), "k", 111, True),
        (StoredFit("k", 100, {}), "k", 89, True),  # gone count too
    ],
)
def test_a_stored_fit_is_reused_until_its_data_changes_materially(stored, key, benchmarks, expected):
    assert REFIT_SHARE == 0.1
    assert refit_needed(stored, key, benchmarks) is expected


def test_no_benchmarks_no_estimate():
    assert estimate_deployment([], DeploymentFacts(gpu="H100", tp_size=1), {}, None) is None
