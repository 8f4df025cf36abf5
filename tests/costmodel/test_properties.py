"""Invariants of the cost model over generated inputs (hypothesis)."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdash.costmodel import (
    CostParams,
    decompose,
    depth_sweep,
    optimal_depth,
    predict_accept_length,
    tau_chain,
    tau_iid,
    tau_survival,
    throughput,
)

rate = st.floats(0.0, 1.0)
rates = st.lists(rate, min_size=1, max_size=16)
steps = st.integers(1, 16)
topk = st.integers(1, 8)
cost_params = st.builds(
    CostParams,
    baseline_tps=st.floats(1.0, 2000.0),
    comm_fraction=st.floats(0.0, 1.0),
    draft_step_ms=st.floats(0.0, 20.0),
    round_overhead_ms=st.floats(0.0, 20.0),
    verify_growth_compute=st.floats(0.0, 0.5),
    verify_growth_comm=st.floats(0.0, 0.5),
    draft_branch_ms=st.floats(0.0, 5.0),
)
COSTS = (
    "draft_step_ms",
    "round_overhead_ms",
    "verify_growth_compute",
    "verify_growth_comm",
    "draft_branch_ms",
)
# generous examples, no per-example deadline (the first call of a run may be slow on a busy machine)
invariant = settings(max_examples=150, deadline=None)


@invariant
@given(rates)
def test_chain_tau_lies_between_one_and_k_plus_one(conditional):
    assert 1.0 <= tau_chain(conditional) <= len(conditional) + 1 + 1e-9


@invariant
@given(rates)
def test_survival_tau_lies_between_one_and_k_plus_one(values):
    survival = sorted(values, reverse=True)  # a survival curve never rises
    assert 1.0 <= tau_survival(survival) <= len(survival) + 1


@invariant
@given(rate, steps)
def test_iid_tau_lies_between_one_and_k_plus_one(alpha, k):
    assert 1.0 - 1e-9 <= tau_iid(alpha, k) <= k + 1 + 1e-9


@invariant
@given(rates, steps, topk, st.integers(2, 64), st.floats(0.1, 2.0))
def test_predicted_tau_is_bounded_by_the_reachable_depth(conditional, k, t, n, factor):
    tau = predict_accept_length(conditional, k, t, n, factor)
    assert 1.0 <= tau.accept_length <= min(k, n - 1) + 1 + 1e-9
    assert tau.extrapolated == (min(k, n - 1) > len(conditional))
    assert (tau.approximation is not None) == (t > 1)


@invariant
@given(rates, steps, st.integers(2, 8))
def test_a_tree_never_accepts_less_than_the_chain_of_the_same_depth(conditional, k, t):
    chain = predict_accept_length(conditional, k)
    tree = predict_accept_length(conditional, k, t, k * t + 1)
    assert tree.accept_length >= chain.accept_length - 1e-9


@invariant
@given(cost_params, st.floats(1.0, 17.0), steps, topk, st.sampled_from(COSTS), st.floats(0.01, 10.0))
def test_tps_falls_as_any_cost_rises(params, tau, k, t, cost, increase):
    before = throughput(params, tau, k, topk=t)
    after = throughput(replace(params, **{cost: getattr(params, cost) + increase}), tau, k, topk=t)
    assert after.tps <= before.tps * (1 + 1e-12)
    assert after.round_ms >= before.round_ms


@invariant
@given(cost_params, st.floats(1.0, 17.0), steps, st.floats(1.01, 3.0))
def test_a_slower_baseline_step_gives_fewer_tps(params, tau, k, slower):
    before = throughput(params, tau, k)
    after = throughput(replace(params, baseline_tps=params.baseline_tps / slower), tau, k)
    assert after.tps < before.tps


@invariant
@given(cost_params, st.floats(1.0, 17.0), steps)
def test_break_even_tau_gives_exactly_the_baseline(params, tau, k):
    break_even = throughput(params, tau, k).break_even_accept_length
    assert throughput(params, break_even, k).tps == pytest.approx(params.baseline_tps)
    assert break_even >= 1.0 - 1e-12  # a round is never shorter than a baseline step


@invariant
@given(cost_params, st.floats(1.0, 17.0), steps, st.floats(1.0, 5000.0), st.floats(1.0, 17.0))
def test_decomposition_factors_multiply_to_measured_over_predicted(params, tau_p, k, measured_tps, tau_m):
    predicted = throughput(params, tau_p, k)
    gap = decompose(predicted, measured_tps, tau_m)
    assert gap.acceptance_factor * gap.round_factor == pytest.approx(measured_tps / predicted.tps)
    assert gap.gap == pytest.approx(1 - measured_tps / predicted.tps)
    assert gap.acceptance_token_ms + gap.round_token_ms == pytest.approx(
        gap.measured_token_ms - gap.predicted_token_ms, rel=1e-9, abs=1e-9
    )
    assert gap.measured_round_ms - gap.unexplained_ms == pytest.approx(predicted.round_ms)


@invariant
@given(cost_params, rates, st.integers(1, 12), st.integers(1, 4))
def test_the_optimal_depth_is_the_fastest_point_of_the_sweep(params, conditional, max_steps, t):
    points = depth_sweep(params, conditional, max_steps, t)
    best = optimal_depth(points)
    assert all(best.tps >= p.tps - 1e-9 for p in points)
    assert len(points) == max_steps
