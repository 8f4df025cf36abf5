"""The load model (round time of batch and depth), its fit, baselines estimated without a no-speculation
run, and the depth schedule with its vLLM and TensorRT-LLM renderings. Numbers worked out by hand."""

import json
import math

import pytest

from specdash.costmodel.estimated import DEPTH_SWEEP, PRIOR_ROUND_FACTOR, estimate_baselines
from specdash.costmodel.loadcosts import cost_params_at
from specdash.costmodel.loadfit import (
    fit_load_model,
    free_parameters,
    held_out_errors,
    predict_load_observations,
)
from specdash.costmodel.loadmodel import LoadObservation, LoadParams, prior_load_params
from specdash.costmodel.priors import DeploymentFacts, architecture_for
from specdash.costmodel.schedule import (
    ScheduleEntry,
    depth_schedule,
    schedule_ranges,
    trtllm_config,
    vllm_config,
)
from specdash.costmodel.throughput import round_time

DENSE = LoadParams(step_ms=10.0, knee_tokens=100.0, draft_step_ms=1.0, overhead_ms=0.5, token_floor=0.0)


def test_one_round_by_hand():
    """T1 10 ms, knee 100 tokens: F(n) = 10 sqrt(1 + (n/100)^2) / sqrt(1 + 0.01^2). At 8 requests, K = 3
    (4 tokens each): the verify reads 32 tokens, drafting 3 x 1 ms and 0.5 ms overhead grow by F(8)/F(1)."""
    norm = math.hypot(1, 0.01)
    f8 = 10 * math.hypot(1, 0.08) / norm
    f32 = 10 * math.hypot(1, 0.32) / norm
    assert DENSE.base_step_ms(8) == pytest.approx(f8)
    expected = f32 + (3 * 1.0 + 0.5) * (f8 / 10)
    assert DENSE.round_ms(8, 3, 4) == pytest.approx(expected)
    assert DENSE.tps(2.5, 8, 3, 4) == pytest.approx(2500 / expected)
    assert DENSE.tps(2.5, 8, 0) == pytest.approx(1000 / f8)  # no speculation: tau is 1
    # continuous in B: 12.5 requests on average sit between 8 and 16
    assert DENSE.round_ms(8, 3, 4) < DENSE.round_ms(12.5, 3, 4) < DENSE.round_ms(16, 3, 4)


def test_the_linear_round_model_is_a_special_case():
    """Flat roofline (knee far away), a per-token floor c, drafting and overhead not growing (g = 0):
    T = T1 (1 + c (B (K+1) - 1)) + K d + o = (T1 (1 - c) + o) + d K + B (T1 c + T1 c K)."""
    p = LoadParams(
        step_ms=8.0, knee_tokens=1e12, draft_step_ms=0.7, overhead_ms=0.4, token_floor=0.01, load_exponent=0.0
    )
    a, b, c, d = 8 * (1 - 0.01) + 0.4, 0.7, 8 * 0.01, 8 * 0.01
    for batch in (1, 3.5, 64):
        for steps in (1, 4, 9):
            assert p.round_ms(batch, steps) == pytest.approx(
                a + b * steps + batch * (c + d * steps), rel=1e-9
            )


def test_the_request_floor_is_paid_once_per_request_not_per_verified_token():
    """Flat roofline, T1 10 ms, per-token floor 1 %, per-request floor 2 %, no drafting or overhead. The step
    at 8 requests: 10 (1 + 0.01 x 7 + 0.02 x 7) = 12.1 ms. A verify of K = 3 at 8 requests reads 32 tokens
    of the same 8 requests: 10 (1 + 0.01 x 31 + 0.02 x 7) = 14.5 ms, where the same 3 % all per token would
    cost 10 (1 + 0.03 x 31) = 19.3 ms. One request alone pays no request floor."""
    p = LoadParams(
        step_ms=10.0,
        knee_tokens=1e12,
        draft_step_ms=0.0,
        overhead_ms=0.0,
        token_floor=0.01,
        request_floor=0.02,
        load_exponent=0.0,
    )
    assert p.base_step_ms(8) == pytest.approx(12.1)
    assert p.round_ms(8, 3) == pytest.approx(14.5)
    per_token = LoadParams(
        step_ms=10.0,
        knee_tokens=1e12,
        draft_step_ms=0.0,
        overhead_ms=0.0,
        token_floor=0.03,
        load_exponent=0.0,
    )
    assert per_token.base_step_ms(8) == pytest.approx(12.1)  # the step alone cannot tell them apart
    assert per_token.round_ms(8, 3) == pytest.approx(19.3)
    assert p.round_ms(1, 3) == pytest.approx(10 * (1 + 0.01 * 3))


def test_a_moe_target_verify_grows_with_the_experts_it_reads():
    """Qwen3-30B-A3B: 128 experts, 8 a token. 8 tokens read 128 (1 - (1 - 1/16)^8) = 51.6 experts, 32 read
    112.4: with 20 % of the step in the experts, F(32)/F(8) = (0.8 + 0.2 x 14.05) / (0.8 + 0.2 x 6.45)."""
    arch = architecture_for("Qwen/Qwen3-30B-A3B")
    p = LoadParams(
        step_ms=10.0, knee_tokens=1e9, draft_step_ms=0.0, overhead_ms=0.0, token_floor=0.0, architecture=arch
    )
    e8 = 128 * (1 - (1 - 8 / 128) ** 8) / 8
    e32 = 128 * (1 - (1 - 8 / 128) ** 32) / 8
    assert p.forward_ms(32) / p.forward_ms(8) == pytest.approx((0.8 + 0.2 * e32) / (0.8 + 0.2 * e8))


def sweep(params: LoadParams, with_baseline: bool, loads=(1, 2, 4, 8, 16, 32, 64, 128), depths=range(1, 11)):
    """A GuideLLM-like sweep: one drafter, depths 1-10, loads 1..128, tau of a geometric chain (0.75)."""
    obs = []
    for batch in loads:
        for k in depths:
            tau = (1 - 0.75 ** (k + 1)) / (1 - 0.75)
            obs.append(LoadObservation(batch, k, params.tps(tau, batch, k, drafter="d"), tau, drafter="d"))
        if with_baseline:
            obs.append(LoadObservation(batch, 0, params.tps(1.0, batch, 0)))
    return obs


TRUE = LoadParams(
    step_ms=7.0, knee_tokens=260.0, draft_step_ms=0.9, overhead_ms=0.6, token_floor=0.002, load_exponent=0.6
)
FACTS = DeploymentFacts(
    gpu="H100", tp_size=1, architecture=architecture_for("meta-llama/Llama-3.1-8B-Instruct")
)


def test_the_fit_recovers_a_sweep_without_a_baseline_and_predicts_held_out_loads():
    obs = sweep(TRUE, with_baseline=False)
    prior = prior_load_params(FACTS, 10.0, {"d": "eagle3"})
    held = held_out_errors(obs, prior, lambda o: o.concurrency)
    assert max(abs(e) for _, e in held) < 0.03
    estimate = estimate_baselines(obs, prior)
    assert estimate.rule == DEPTH_SWEEP and all(level.estimated for level in estimate.levels)
    for level in estimate.levels:  # the step at K = 0 the depth sweep implies, against the truth
        assert level.baseline_tps == pytest.approx(1000 / TRUE.base_step_ms(level.concurrency), rel=0.05)
    assert estimate.at(48).baseline_tps == pytest.approx(1000 / TRUE.base_step_ms(48), rel=0.05)


def test_with_baselines_the_fit_is_exact():
    obs = sweep(TRUE, with_baseline=True, loads=(1, 8, 64), depths=(1, 3, 5, 7))
    fit = fit_load_model(obs, prior_load_params(FACTS, 10.0, {"d": "eagle3"}))
    assert fit.median_abs_rel_error < 0.002
    test = sweep(TRUE, with_baseline=False, loads=(24,), depths=(4,))
    assert predict_load_observations(fit.params, test)[0] == pytest.approx(test[0].measured_tps, rel=0.02)


def test_one_depth_uses_the_priors_round_factor():
    """Two loads, K = 3 only: each load's baseline step is its measured round over the priors' T_round /
    T_base for that setting and load, the prior being the fitted model's shape."""
    obs = [LoadObservation(1, 3, 180.0, 2.6, drafter="d"), LoadObservation(16, 3, 120.0, 2.6, drafter="d")]
    estimate = estimate_baselines(obs, prior_load_params(FACTS, 10.0, {"d": "eagle3"}))
    assert estimate.rule == PRIOR_ROUND_FACTOR
    p = estimate.params
    for level, o in zip(estimate.levels, obs, strict=True):
        factor = p.round_ms(o.concurrency, 3, 4, 1, "d") / p.base_step_ms(o.concurrency)
        assert level.step_ms == pytest.approx((1000 * 2.6 / o.measured_tps) / factor)


def test_the_schedule_picks_the_fastest_depth_and_drops_speculation_at_high_load():
    rates = [0.7] * 10
    entries = depth_schedule(TRUE, rates, [1, 8, 512], max_steps=8)
    for entry in entries:
        brute = [TRUE.tps(1.0, entry.concurrency, 0)] + [
            TRUE.tps(sum(0.7**j for j in range(k + 1)), entry.concurrency, k) for k in range(1, 9)
        ]
        assert entry.tok_s == pytest.approx(max(brute)) and brute.index(max(brute)) == entry.num_steps
        assert entry.aggregate_tok_s == pytest.approx(entry.tok_s * entry.concurrency)
        assert entry.speedup == pytest.approx(entry.tok_s / brute[0])
    assert entries[0].num_steps > entries[-1].num_steps


def entry(batch, steps):
    return ScheduleEntry(batch, steps, 2.0, 100.0, 100.0 * batch, 1.5, False)


SCHEDULE = [entry(1, 5), entry(8, 3), entry(32, 3), entry(128, 0)]


def test_ranges_break_at_geometric_midpoints_and_merge():
    """Breaks at floor(sqrt(1 x 8)) = 2, floor(sqrt(8 x 32)) = 16 (merged: same K), floor(sqrt(32 x 128))
    = 64; the last range runs to the maximum batch."""
    assert schedule_ranges(SCHEDULE, 4096) == [(1, 2, 5), (3, 64, 3), (65, 4096, 0)]


def test_vllm_dynamic_speculative_decoding_config():
    text = vllm_config(SCHEDULE, "eagle3", "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3")
    assert text.startswith("--speculative-config '") and text.endswith("'")
    config = json.loads(text[len("--speculative-config '") : -1])
    assert config == {
        "method": "eagle3",
        "model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3",
        "num_speculative_tokens": 5,
        "num_speculative_tokens_per_batch_size": [[1, 2, 5], [3, 64, 3], [65, 4096, 0]],
    }
    assert vllm_config([entry(1, 0)], "eagle3").startswith("# no draft depth")


def test_trtllm_draft_len_schedule():
    assert trtllm_config(SCHEDULE) == (
        "speculative_config:\n  decoding_type: Eagle3\n  max_draft_len: 5\n  draft_len_schedule:\n"
        "    1: 5\n    3: 3\n    65: 0"
    )
    # deeper later than at batch 1: clamped, and said so
    rising = trtllm_config([entry(1, 2), entry(16, 4)])
    assert "    5: 2" in rising and "clamped to max_draft_len 2 from batch size 5" in rising


def test_schedule_json_shape():
    keys = set(SCHEDULE[0].as_json())
    assert {"concurrency", "num_steps", "tok_s", "aggregate_tok_s", "speedup"} <= keys


def test_a_sweep_at_every_load_tells_the_request_floor_from_the_token_floor():
    """A sweep at loads 1-128 and depths 1-10 whose stated round pays 0.2 % of T1 per verified token and
    0.6 % per request: the fit recovers both (depth moves only the first, load both); at one load the
    request floor is not free (it cannot be told from T1 there)."""
    truth = LoadParams(
        step_ms=7.0,
        knee_tokens=260.0,
        draft_step_ms=0.9,
        overhead_ms=0.6,
        token_floor=0.002,
        request_floor=0.006,
        draft_step_ms_by_drafter=(("d", 0.9),),
    )
    obs = sweep(truth, with_baseline=True)
    prior = prior_load_params(DeploymentFacts(gpu="H100"), 10.0, {"d": "eagle3"})
    fit = fit_load_model(obs, prior)
    assert "request_floor" in fit.free
    assert fit.params.request_floor == pytest.approx(0.006, abs=0.0005)
    assert fit.params.token_floor == pytest.approx(0.002, abs=0.0003)
    one_load = [o for o in obs if o.concurrency == 1]
    assert "request_floor" not in free_parameters(one_load, prior)


def test_the_batch_1_parameters_at_a_load_keep_the_request_floor_out_of_the_verify_growth():
    """cost_params_at restates the round at one load and setting as CostParams: the floors of the test
    above, K = 3 at 8 requests, a 14.5 ms verify over a 12.1 ms step is a growth of (14.5 / 12.1 - 1) / 3
    per extra token, and round_time() gives the same 14.5 ms (a per-token 3 % would say 19.3)."""
    p = LoadParams(
        step_ms=10.0,
        knee_tokens=1e12,
        draft_step_ms=0.0,
        overhead_ms=0.0,
        token_floor=0.01,
        request_floor=0.02,
        load_exponent=0.0,
    )
    params = cost_params_at(p, 8, 3)
    assert params.baseline_tps == pytest.approx(1000 / 12.1)
    assert params.verify_growth_compute == pytest.approx((14.5 / 12.1 - 1) / 3)
    assert round_time(params, 3).total_ms == pytest.approx(p.round_ms(8, 3)) == pytest.approx(14.5)
