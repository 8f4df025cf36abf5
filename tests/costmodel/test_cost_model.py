"""The cost model reproduces the test vectors of docs/cost-model.md, and its documented rules."""

import pytest

from specdash.costmodel import (
    CostParams,
    decompose,
    depth_sweep,
    extend_rates,
    measured_round_ms,
    optimal_depth,
    predict_accept_length,
    round_time,
    tau_chain,
    tau_from_simulated_acc_len,
    tau_iid,
    tau_survival,
    throughput,
    tree_shape,
)
from specdash.costmodel.calculator import Acceptance, calculate

STORY = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=1.93 / 3)
TTT5_ACC = [0.742, 0.60, 0.58, 0.56, 0.55]


def leviathan_speedup(alpha: float, gamma: int, c: float) -> float:
    """Leviathan et al. 2023, Theorem 3.8: (1 - a^(g+1)) / ((1 - a)(g c + 1))."""
    return (1 - alpha ** (gamma + 1)) / ((1 - alpha) * (gamma * c + 1))


@pytest.mark.parametrize(
    "alpha,gamma,c,speedup",
    [(0.8, 5, 0.0, 3.69), (0.9, 10, 0.0, 6.86), (0.8, 5, 0.05, 2.95)],
)
def test_leviathan_table_1(alpha, gamma, c, speedup):
    # verify of gamma+1 tokens costs one target step (no growth); a draft step costs c of a step
    params = CostParams(baseline_tps=100.0, draft_step_ms=c * 10.0)
    result = throughput(params, tau_iid(alpha, gamma), steps=gamma)
    assert result.speedup == pytest.approx(speedup, abs=0.005)


@pytest.mark.parametrize("alpha,c", [(0.8, 0.05), (0.6, 0.1), (0.9, 0.02)])
def test_optimal_depth_matches_leviathans_closed_form(alpha, c):
    params = CostParams(baseline_tps=100.0, draft_step_ms=c * 10.0)
    points = depth_sweep(params, [alpha] * 30, max_steps=30)
    best_gamma = max(range(1, 31), key=lambda g: leviathan_speedup(alpha, g, c))
    assert optimal_depth(points).steps == best_gamma
    assert optimal_depth(points).speedup == pytest.approx(leviathan_speedup(alpha, best_gamma, c))


def test_story_prediction():
    predicted = throughput(STORY, 2.1, steps=3)
    assert predicted.tps == pytest.approx(161.0, abs=0.1)
    assert predicted.round_ms == pytest.approx(13.04, abs=0.01)
    assert predicted.round.comm_ms == predicted.round.compute_ms == pytest.approx(5.556, abs=0.001)
    assert predicted.round.draft_ms == pytest.approx(1.93)


def test_story_back_solve_and_gap():
    gap = decompose(throughput(STORY, 2.1, steps=3), measured_tps=82.3, measured_accept_length=2.1)
    assert gap.measured_round_ms == pytest.approx(25.5, abs=0.05)
    assert gap.gap == pytest.approx(0.489, abs=0.001)
    assert gap.acceptance_factor == pytest.approx(1.0)
    assert gap.round_factor == pytest.approx(0.511, abs=0.001)
    assert gap.unexplained_ms == pytest.approx(12.5, abs=0.05)


@pytest.mark.parametrize("tau,tps", [(2.75, 108), (3.5, 137)])
def test_story_deeper_acceptance_on_the_slow_round(tau, tps):
    # the slow round as a cost profile: everything the model did not explain becomes overhead
    slow = decompose(throughput(STORY, 2.1, steps=3), 82.3, 2.1)
    params = CostParams(
        baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=1.93 / 3, round_overhead_ms=slow.unexplained_ms
    )
    assert throughput(params, tau, steps=3).tps == pytest.approx(tps, abs=0.5)


def test_story_break_even_on_the_slow_round():
    params = CostParams(baseline_tps=90.0, comm_fraction=0.5, round_overhead_ms=25.5 - 1000 / 90)
    result = throughput(params, 2.1, steps=3)
    assert result.break_even_accept_length == pytest.approx(2.30, abs=0.005)
    at_break_even = throughput(params, result.break_even_accept_length, steps=3)
    assert at_break_even.tps == pytest.approx(90.0)


@pytest.mark.parametrize(
    "tau,expected",
    [
        (lambda: tau_chain(TTT5_ACC), 2.67),
        (lambda: tau_chain([]), 1.0),
        (lambda: tau_chain([1.0, 1.0, 1.0]), 4.0),
        (lambda: tau_survival([0.8, 0.5, 0.3]), 2.6),
        (lambda: tau_iid(0.8, 5), 3.689),
        (lambda: tau_iid(1.0, 5), 6.0),
        (lambda: tau_from_simulated_acc_len(1.67), 2.67),
    ],
    ids=["chain-ttt5", "chain-empty", "chain-perfect", "survival", "iid", "iid-perfect", "simulated-acc-len"],
)
def test_accept_length_variants(tau, expected):
    assert tau() == pytest.approx(expected, abs=0.005)


def test_survival_rates_are_summed_not_multiplied():
    # vLLM reports the share of rounds reaching each position: multiplying them would count twice
    survival = [0.742, 0.742 * 0.60, 0.742 * 0.60 * 0.58]
    assert tau_survival(survival) == pytest.approx(tau_chain(TTT5_ACC[:3]))


def test_iid_is_a_chain_of_equal_rates():
    assert tau_iid(0.7, 6) == pytest.approx(tau_chain([0.7] * 6))


def test_extrapolation_past_trained_depth_is_marked():
    rates, extrapolated = extend_rates([0.8, 0.7], 4)
    assert extrapolated and rates == pytest.approx([0.8, 0.7, 0.63, 0.567])
    assert extend_rates([0.8, 0.7], 2) == ([0.8, 0.7], False)
    with pytest.raises(ValueError):
        extend_rates([], 3)


def test_predicted_accept_length_scales_caps_and_extrapolates():
    within = predict_accept_length(TTT5_ACC, 5)
    assert within.accept_length == pytest.approx(2.67, abs=0.005) and not within.extrapolated
    assert within.approximation is None
    deep = predict_accept_length(TTT5_ACC, 15, draft_tokens=16)
    assert deep.extrapolated and deep.accept_length > within.accept_length
    assert predict_accept_length([0.9, 0.9], 2, acc_to_acceptance=2.0).accept_length == pytest.approx(3.0)


@pytest.mark.parametrize(
    "steps,topk,draft_tokens,shape",
    [
        (3, 1, 4, (3, 1.0)),
        (5, 3, 6, (5, 1.0)),
        (7, 4, 8, (7, 1.0)),
        (3, 4, 13, (3, 4.0)),
        (5, 2, 8, (5, 1.4)),
        (7, 4, 4, (3, 1.0)),
        (4, 2, None, (4, 2.0)),
    ],
)
def test_tree_shape_spreads_the_verified_tokens(steps, topk, draft_tokens, shape):
    depth, width = tree_shape(steps, topk, draft_tokens)
    assert (depth, width) == (shape[0], pytest.approx(shape[1]))


def test_tree_accepts_more_per_position_and_is_marked():
    chain = predict_accept_length(TTT5_ACC[:3], 3)
    tree = predict_accept_length(TTT5_ACC[:3], 3, topk=4, draft_tokens=13)
    # each position accepts when any of 4 candidates does: 1 - (1 - p)^4
    expected = tau_chain([1 - (1 - p) ** 4 for p in TTT5_ACC[:3]])
    assert tree.accept_length == pytest.approx(expected)
    assert tree.accept_length > chain.accept_length
    assert tree.approximation.startswith("tree 3/4/13")
    # a tree whose budget is only N - 1 = 3 tokens cannot reach past depth 3
    shallow = predict_accept_length(TTT5_ACC, 7, topk=4, draft_tokens=4)
    assert shallow.accept_length == pytest.approx(tau_chain(TTT5_ACC[:3]))


def test_round_time_parts_and_growth():
    params = CostParams(
        baseline_tps=100.0,
        comm_fraction=0.25,
        draft_step_ms=0.5,
        round_overhead_ms=1.0,
        verify_growth_compute=0.1,
        verify_growth_comm=0.02,
        draft_branch_ms=0.2,
    )
    rt = round_time(params, steps=4, draft_tokens=9, topk=2)
    assert rt.compute_ms == pytest.approx(7.5 * (1 + 0.1 * 8))
    assert rt.comm_ms == pytest.approx(2.5 * (1 + 0.02 * 8))
    assert rt.draft_ms == pytest.approx(4 * (0.5 + 0.2))
    assert rt.overhead_ms == 1.0
    assert params.verify_growth == pytest.approx(0.75 * 0.1 + 0.25 * 0.02)


def test_profile_by_step_time_equals_profile_by_tps():
    by_step = CostParams.from_base_step_ms(1000 / 90, comm_fraction=0.5, draft_step_ms=1.93 / 3)
    assert throughput(by_step, 2.1, 3).tps == pytest.approx(throughput(STORY, 2.1, 3).tps)


@pytest.mark.parametrize(
    "field,value",
    [
        ("baseline_tps", 0.0),
        ("comm_fraction", 1.5),
        ("draft_step_ms", -1.0),
        ("round_overhead_ms", -0.1),
        ("verify_growth_comm", -0.5),
    ],
)
def test_impossible_profiles_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        CostParams(**{"baseline_tps": 90.0, field: value})


def test_back_solve_is_the_inverse_of_the_forward_model():
    result = throughput(STORY, 2.67, steps=5)
    assert measured_round_ms(result.tps, 2.67) == pytest.approx(result.round_ms)
    with pytest.raises(ValueError):
        measured_round_ms(0.0, 2.0)


def test_decomposition_without_measured_tau_puts_everything_on_the_round():
    gap = decompose(throughput(STORY, 2.1, 3), 82.3)
    assert gap.acceptance_factor is None and gap.round_factor is None
    assert gap.measured_round_ms == pytest.approx(25.5, abs=0.05)


def test_gap_per_token_ms_splits_into_acceptance_and_round_parts():
    gap = decompose(throughput(STORY, 2.67, 5), measured_tps=150.0, measured_accept_length=2.4)
    assert gap.acceptance_token_ms > 0 and gap.round_token_ms > 0
    assert gap.acceptance_token_ms + gap.round_token_ms == pytest.approx(
        gap.measured_token_ms - gap.predicted_token_ms
    )


def test_pcie_wants_deeper_speculation_than_nvlink():
    # collectives are paid once per verify; when only compute grows with N, a collective-heavy
    # (PCIe) deployment pays less per extra verified token and goes deeper
    rates = [0.8] * 16
    pcie = CostParams(baseline_tps=90.0, comm_fraction=0.5, draft_step_ms=0.3, verify_growth_compute=0.06)
    nvlink = CostParams(baseline_tps=90.0, comm_fraction=0.1, draft_step_ms=0.3, verify_growth_compute=0.06)
    deep = optimal_depth(depth_sweep(pcie, rates, 16))
    shallow = optimal_depth(depth_sweep(nvlink, rates, 16))
    assert deep.steps > shallow.steps


def test_depth_sweep_marks_extrapolated_depths():
    points = depth_sweep(STORY, TTT5_ACC, max_steps=8)
    assert [p.steps for p in points] == list(range(1, 9))
    assert [p.draft_tokens for p in points] == list(range(2, 10))
    assert [p.extrapolated for p in points] == [False] * 5 + [True] * 3
    assert points[4].accept_length == pytest.approx(2.67, abs=0.005)
    tree = depth_sweep(STORY, TTT5_ACC, max_steps=3, topk=2)
    assert [p.draft_tokens for p in tree] == [3, 5, 7]
    with pytest.raises(ValueError):
        depth_sweep(STORY, TTT5_ACC, max_steps=0)
    with pytest.raises(ValueError):
        optimal_depth([])


@pytest.mark.parametrize("field", ["conditional_rates", "survival_rates"])
def test_an_empty_rate_curve_is_refused_where_it_is_given(field):
    """An empty list used to count as the one way given, then fail deep in throughput() on a None tau."""
    with pytest.raises(ValueError, match=f"{field} is empty: give at least one rate"):
        Acceptance(**{field: []})
    # one rate is a curve: chain tau at one step = 1 + p_1
    assert calculate(STORY, Acceptance(**{field: [0.5]}), steps=1)["accept_length"] == pytest.approx(1.5)
