"""The cost model reproduces the test vectors of DESIGN.md section 3."""

import pytest

from specdash.costmodel import (
    CostParams,
    decompose,
    extend_rates,
    tau_chain,
    tau_iid,
    tau_survival,
    throughput,
)


@pytest.mark.parametrize(
    "alpha,gamma,c,speedup",
    [(0.8, 5, 0.0, 3.69), (0.9, 10, 0.0, 6.86), (0.8, 5, 0.05, 2.95)],
)
def test_leviathan_table_1(alpha, gamma, c, speedup):
    # Leviathan et al. 2023: verify of gamma+1 tokens costs one target step; a draft step costs c of it.
    params = CostParams(baseline_tps=100.0, draft_step_ms=c * 10.0)
    result = throughput(params, tau_iid(alpha, gamma), steps=gamma)
    assert result.speedup == pytest.approx(speedup, abs=0.005)


def test_story_prediction_and_back_solve():
    params = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=1.93 / 3)
    predicted = throughput(params, 2.1, steps=3)
    assert predicted.tps == pytest.approx(161.0, abs=0.1)
    assert predicted.round_ms == pytest.approx(13.04, abs=0.01)
    gap = decompose(predicted, measured_tps=82.3, measured_accept_length=2.1)
    assert gap.measured_round_ms == pytest.approx(25.5, abs=0.05)
    assert gap.gap == pytest.approx(0.489, abs=0.001)
    assert gap.acceptance_factor * gap.round_factor == pytest.approx(82.3 / predicted.tps)


@pytest.mark.parametrize("tau,tps", [(2.75, 108), (3.5, 137)])
def test_story_deeper_acceptance_on_the_slow_round(tau, tps):
    assert 1000 * tau / 25.5 == pytest.approx(tps, abs=0.5)


def test_story_break_even_on_the_slow_round():
    params = CostParams(baseline_tps=90.0, comm_fraction=0.5, round_overhead_ms=25.5 - 1000 / 90)
    assert throughput(params, 2.1, steps=3).break_even_accept_length == pytest.approx(2.30, abs=0.005)


def test_chain_tau_from_per_position_accuracy():
    assert tau_chain([0.742, 0.60, 0.58, 0.56, 0.55]) == pytest.approx(2.67, abs=0.005)


def test_survival_rates_are_summed():
    assert tau_survival([0.8, 0.5, 0.3]) == pytest.approx(2.6)


def test_extrapolation_past_trained_depth_is_marked():
    rates, extrapolated = extend_rates([0.8, 0.7], 4)
    assert extrapolated and rates == pytest.approx([0.8, 0.7, 0.63, 0.567])
    assert extend_rates([0.8, 0.7], 2) == ([0.8, 0.7], False)
