"""Priors: draft cost by drafter family, verify growth from the target's architecture and load, the baseline
between and beyond measured loads, and the depth they advise. Every expected number is worked out here."""

import math
from dataclasses import replace

import pytest

from specdash.costmodel import depth_sweep, optimal_depth
from specdash.costmodel.load import baseline_at_load
from specdash.costmodel.priors import (
    EAGER_DRAFT_FACTOR,
    EAGER_OVERHEAD_FACTOR,
    FAMILIES,
    MOE_EXPERT_SHARE,
    ROUND_OVERHEAD,
    VERIFY_TOKEN_FLOOR,
    DeploymentFacts,
    TargetArchitecture,
    architecture_for,
    compute_time,
    distinct_experts,
    drafter_family,
    harness_factors,
    knee_tokens,
    prior_comm_fraction,
    prior_costs,
    resolve_costs,
    size_factor,
    verify_growth,
)

QWEN3_235B = TargetArchitecture(235, 22, 128, 8)


@pytest.mark.parametrize(
    "names,family",
    [
        (("EAGLE3",), "eagle3"),
        (("eagle-3",), "eagle3"),
        (("EAGLE",), "eagle"),
        (("NEXTN",), "mtp"),
        (("ngram",), "ngram"),
        (("medusa",), "medusa"),
        (("unknown", "EAGLE3"), "eagle3"),
        ((None,), "eagle3"),
        (("draft_model",), "draft_model"),
        (("HASS",), "eagle"),
    ],
)
def test_drafter_family(names, family):
    assert drafter_family(*names) == family


def test_distinct_experts_touched_by_a_verify():
    # E (1 - (1 - k/E)^n): Qwen3-235B (128 experts, 8 per token): one token 8, four 128 (1 - 0.9375^4)
    assert distinct_experts(128, 8, 1) == pytest.approx(8.0)
    assert distinct_experts(128, 8, 4) == pytest.approx(128 * (1 - 0.9375**4))  # 29.12
    assert distinct_experts(128, 8, 10_000) == pytest.approx(128.0)  # every expert, at most


def test_moe_verify_grows_with_the_experts_it_reads_and_dense_barely():
    knee = knee_tokens("H200")
    assert knee == 206
    dense = TargetArchitecture(8, 8)
    # dense at batch 1, 4 tokens: sqrt(1 + (4/206)^2) / sqrt(1 + (1/206)^2) - 1 ~ 1.8e-4, over 3 tokens
    ratio = math.hypot(1, 4 / knee) / math.hypot(1, 1 / knee)
    assert verify_growth(dense, knee, 1, 4) == pytest.approx((ratio - 1) / 3 + VERIFY_TOKEN_FLOOR)
    # MoE: 0.8 x dense + 0.2 x (distinct experts / 8), from 1 to 4 tokens
    moe = (1 - MOE_EXPERT_SHARE) * ratio + MOE_EXPERT_SHARE * 128 * (1 - 0.9375**4) / 8
    assert compute_time(QWEN3_235B, knee, 4) == pytest.approx(moe)
    assert verify_growth(QWEN3_235B, knee, 1, 4) == pytest.approx((moe - 1) / 3 + VERIFY_TOKEN_FLOOR)
    assert verify_growth(QWEN3_235B, knee, 1, 4) > 20 * verify_growth(dense, knee, 1, 4)


def test_verify_growth_depends_on_batch_times_tokens():
    knee = 206
    dense = TargetArchitecture(70, 70)
    # at batch 64 a 4-token verify is 256 tokens, past the knee: growth per token is large
    big = math.hypot(1, 256 / knee) / math.hypot(1, 64 / knee)
    assert verify_growth(dense, knee, 64, 4) == pytest.approx((big - 1) / 3 + VERIFY_TOKEN_FLOOR)
    assert verify_growth(dense, knee, 64, 4) > 50 * verify_growth(dense, knee, 1, 4)


def test_architecture_from_config_json_and_from_names():
    deepseek = {"n_routed_experts": 256, "num_experts_per_tok": 8, "hidden_size": 7168}
    assert TargetArchitecture.from_config(deepseek).is_moe
    llama4 = {"text_config": {"num_local_experts": 16, "num_experts_per_tok": 1}}
    assert TargetArchitecture.from_config(llama4).num_experts == 16
    assert not TargetArchitecture.from_config({"hidden_size": 4096}).is_moe
    # Llama-3.1-8B's config.json: K and V of 8 heads of 128 in bf16 a layer; DeepSeek-V3's MLA latent
    llama = {
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_size": 4096,
    }
    assert TargetArchitecture.from_config(llama).num_layers == 32
    assert TargetArchitecture.from_config(llama).kv_bytes_per_layer_token == 4096
    mla = {**deepseek, "num_hidden_layers": 61, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
    assert TargetArchitecture.from_config(mla).kv_bytes_per_layer_token == (512 + 64) * 2
    # the KV geometry from each config.json: Qwen3-235B 94 layers x 4 KV heads x 128, Llama-3.1-8B 32 x 8 x 128
    assert architecture_for("Qwen3-235B-A22B-Instruct-2507") == replace(
        QWEN3_235B, num_layers=94, kv_bytes_per_layer_token=2 * 4 * 128 * 2
    )
    assert architecture_for("meta-llama/Llama-3.1-8B-Instruct") == TargetArchitecture(
        8.0, 8.0, num_layers=32, kv_bytes_per_layer_token=2 * 8 * 128 * 2
    )
    assert architecture_for("Qwen/Qwen3.6-35B-A3B").num_experts == 128  # a MoE the table does not know
    assert architecture_for("my-model") is None
    # a distilled model is its dense student, not its MoE teacher; Mixtral is a MoE of 8 experts, 2 per token
    assert architecture_for("deepseek-ai/DeepSeek-R1-Distill-Llama-8B") == TargetArchitecture(8.0, 8.0)
    assert architecture_for("deepseek-ai/DeepSeek-R1").is_moe
    mixtral = architecture_for("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert (mixtral.num_experts, mixtral.experts_per_token) == (8, 2)


def test_prior_costs_at_batch_1():
    facts = DeploymentFacts("H100", 1, None, TargetArchitecture(8, 8))
    prior = prior_costs(facts, 10.0, "eagle3", 1, 4)
    # one GPU: no all-reduce; the 8B reference size: draft 0.13 of the 10 ms step, overhead 0.10
    assert prior.comm_fraction == 0.0
    assert prior.draft_step_ms == pytest.approx(FAMILIES["eagle3"].draft_step * 10.0)
    assert prior.round_overhead_ms == pytest.approx(ROUND_OVERHEAD * 10.0)
    ngram = prior_costs(facts, 10.0, "ngram", 1, 11)
    assert ngram.draft_step_ms == 0.0


def test_drafting_does_not_pay_the_all_reduce_and_shrinks_with_the_target():
    assert prior_comm_fraction(8, "pcie") == 0.5 and prior_comm_fraction(8, "nvlink") == 0.12
    assert prior_comm_fraction(1, "pcie") == 0.0
    pcie = prior_costs(DeploymentFacts("RTX PRO 6000", 8, "pcie", None), 10.0, "eagle3")
    # half the step is all-reduce: the drafter scales with the other half
    assert pcie.draft_step_ms == pytest.approx(0.13 * 0.5 * 10.0)
    # 70B over 8 GPUs is 8.75B per GPU: (8 / 8.75)^0.4 of the reference draft cost
    assert size_factor(TargetArchitecture(70, 70), 8) == pytest.approx((8 / 8.75) ** 0.4)
    assert size_factor(TargetArchitecture(405, 405), 1) == 0.4  # (8/405)^0.4 = 0.21, bounded below


def test_stated_costs_win_over_priors():
    facts = DeploymentFacts("H100", 1, None, None)
    stated = resolve_costs(
        {
            "comm_fraction": 0.0,
            "draft_step_ms": 0.5,
            "round_overhead_ms": 0.0,
            "verify_growth_compute": 0.0,
            "verify_growth_comm": 0.0,
        },
        facts,
        100.0,
    )
    assert (stated.draft_step_ms, stated.round_overhead_ms, stated.verify_growth_compute) == (0.5, 0.0, 0.0)
    filled = resolve_costs({"draft_step_ms": 0.5}, facts, 100.0)
    assert filled.draft_step_ms == 0.5 and filled.round_overhead_ms == pytest.approx(ROUND_OVERHEAD * 10.0)


def test_baseline_between_and_beyond_measured_loads():
    facts = DeploymentFacts("H100", 1, None, TargetArchitecture(8, 8))
    measured = {1: 100.0, 8: 80.0}
    assert baseline_at_load(measured, 8, facts).rule == "measured"
    # batch 4: log step interpolated, w = ln 4 / ln 8 = 2/3 -> step = 10^(1/3) * 12.5^(2/3) ms
    mid = baseline_at_load(measured, 4, facts)
    assert mid.rule == "interpolated"
    assert 1000 / mid.baseline_tps == pytest.approx(10 ** (1 / 3) * 12.5 ** (2 / 3))
    # batch 64: the batch-8 step scaled by the load model, sqrt(1 + (64/295)^2) / sqrt(1 + (8/295)^2)
    far = baseline_at_load(measured, 64, facts)
    scale = math.hypot(1, 64 / 295) / math.hypot(1, 8 / 295)
    assert far.rule == "extrapolated" and far.baseline_tps == pytest.approx(80.0 / scale)
    assert baseline_at_load({}, 1, facts) is None


def test_pcie_wants_a_deeper_draft_than_nvlink_with_the_priors():
    """The seed insight: all-reduce is paid once per verify, drafting never pays it. Same drafter, same
    MoE target and baseline; only the share of a step in all-reduce differs (PCIe 0.5, NVLink 0.12)."""
    rates = [0.85, 0.8, 0.78, 0.76, 0.74, 0.72, 0.7, 0.68, 0.66, 0.64, 0.62, 0.6, 0.58, 0.56, 0.54, 0.52]
    kimi = architecture_for("Kimi-K2-Instruct")
    best = {}
    for link in ("pcie", "nvlink"):
        facts = DeploymentFacts("H200", 8, link, kimi)
        # growth depends on how many tokens are verified: one prior per depth
        points = []
        for steps in range(1, 17):
            params = resolve_costs({}, facts, 90.0, "eagle3", 1, steps + 1)
            points.append(depth_sweep(params, rates, steps)[-1])
        best[link] = optimal_depth(points).steps
    assert best["pcie"] > best["nvlink"]


@pytest.mark.parametrize(
    ("engine", "eager"),
    [
        ("pytorch", True),
        ("PyTorch 2.5.1", True),
        ("transformers", True),
        ("Hugging Face generate", True),
        ("hf", True),
        ("sglang", False),
        ("vllm", False),
        ("gpt-fast (torch.compile)", False),  # compiled with CUDA graphs: a serving engine's step
        (None, False),
    ],
)
def test_harness_from_the_engine_name(engine, eager):
    assert harness_factors(engine) == ((EAGER_DRAFT_FACTOR, EAGER_OVERHEAD_FACTOR) if eager else (1.0, 1.0))
