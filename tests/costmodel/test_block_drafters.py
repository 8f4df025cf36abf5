"""Block drafters (DFlash, DSpark): all their draft tokens in one step. Every bound and formula that a chain's
one token a step would set is stated per family here; expected numbers are worked out in the comments."""

import pytest

from specdash.costmodel import CostParams, depth_sweep, optimal_depth, predict_accept_length, round_time
from specdash.costmodel.acceptance import tree_shape
from specdash.costmodel.priors import (
    FAMILIES,
    DeploymentFacts,
    TargetArchitecture,
    drafter_family,
    is_block_family,
    resolve_costs,
)
from specdash.costmodel.throughput import verified_tokens
from specdash.ingest.formats.common import draft_setting
from specdash.ingest.records import BenchmarkRecord
from specdash.ingest.rules import record_problems
from tests.ingest_support import SGLANG, benchmarks, load


@pytest.mark.parametrize(
    "names,family",
    [
        (("DFLASH",), "dflash"),
        (("dflash",), "dflash"),  # vLLM's method
        (("z-lab/Qwen3-8B-DFlash-b16",), "dflash"),
        (("qwen3_8b_dflash",), "dflash"),
        (("DSPARK",), "dspark"),
        (("RadixArk/Kimi-K3-DSpark",), "dspark"),
        (("deepseek-ai/dspark_qwen3_8b_block7",), "dspark"),  # not MTP for the "deepseek" in it
        (("domino",), "domino"),
        (("qwen3-8b-peagle",), "peagle"),  # not EAGLE for the "eagle" in it
        (("sharded-flash-attn-eagle3",), "eagle3"),  # "d-flash" inside a word is no DFlash
        (("GLM-4.7-Flash",), "eagle3"),
    ],
)
def test_the_2026_families_are_recognised(names, family):
    assert drafter_family(*names) == family


def test_block_families_are_the_ones_that_draft_in_one_step():
    assert {f for f, prior in FAMILIES.items() if prior.block} == {"dflash", "dspark", "domino", "peagle"}
    assert not is_block_family("eagle3") and not is_block_family("no-such-family")
    assert all(prior.source for prior in FAMILIES.values())


def test_accept_length_bound_is_stated_per_family():
    fields = dict(deployment="Qwen3-8B, TP1, sglang", decode_tps=162.0, num_steps=1, topk=1)
    # DFlash's one step drafts its block of 16 (root included): at most 16 tokens a round
    dflash = BenchmarkRecord(
        speculative_algorithm="DFLASH", num_draft_tokens=16, accept_length=2.655, **fields
    )
    assert dflash.max_accept_length() == 16.0
    over = BenchmarkRecord(speculative_algorithm="DFLASH", num_draft_tokens=16, accept_length=16.5, **fields)
    assert [str(p) for p in record_problems(over, "b.jsonl", 3)] == [
        "b.jsonl:3: accept_length: 16.5 is more than a round of 1/1/16 can emit "
        "(at most 16: a DFLASH round verifies its block of draft tokens)"
    ]
    # an EAGLE-3 chain drafts one token a step: one step and the bonus token, 2
    chain = BenchmarkRecord(
        speculative_algorithm="EAGLE3", num_draft_tokens=16, accept_length=2.655, **fields
    )
    assert "(at most 2: min(draft tokens, steps + 1))" in str(record_problems(chain, "b.jsonl", 3)[0])
    # speculation of an unknown kind with more draft tokens than steps can only be a block drafter
    unknown = BenchmarkRecord(
        speculative_algorithm="unknown", num_draft_tokens=16, accept_length=2.655, **fields
    )
    assert unknown.max_accept_length() == 16.0
    # a block drafter whose block the file leaves unsaid has no bound, not a chain's
    unsized = BenchmarkRecord(speculative_algorithm="DSPARK", accept_length=5.1, **fields)
    assert unsized.max_accept_length() is None


def test_the_published_sglang_dflash_log_shape_is_one_benchmark(engine):
    """1 step, top-k 1, 16 draft tokens, accept len 2.65-2.66 (fixture: tests/fixtures/sglang/README.md)."""
    load(engine, SGLANG / "server_dflash.log")
    (bench,) = benchmarks(engine)
    assert bench.speculative_algorithm == "DFLASH"
    assert (bench.num_steps, bench.topk, bench.num_draft_tokens) == (1, 1, 16)
    assert bench.drafter_path == "z-lab/Qwen3-8B-DFlash-b16"
    # seven Decode batch lines; the first follows the Prefill batch line and is left out. The other six:
    # gen throughput 161.80, 162.40, 161.95, 162.10, 162.25, 161.70 -> median (161.95 + 162.10) / 2;
    # accept len 2.65, 2.66, 2.65, 2.66, 2.65, 2.66 -> median 2.655, more than the chain bound of 2
    assert bench.decode_tps == pytest.approx(162.025)
    assert bench.accept_length == pytest.approx(2.655)
    assert bench.raw["intervals"]["left_out"] == {"prefill": 1}


def test_a_block_reaches_as_deep_as_its_draft_tokens():
    rates = [0.8, 0.6, 0.5]
    # DFlash with a block of 4 (3 drafted positions) in one step: tau = 1 + 0.8 + 0.48 + 0.24 = 2.52
    assert tree_shape(1, 1, 4) == (3, 1.0)
    assert predict_accept_length(rates, 1, 1, 4).accept_length == pytest.approx(2.52)
    # a chain of one step reaches one position: 1 + 0.8
    assert tree_shape(1, 1, 4, block=False) == (1, 1.0)
    assert predict_accept_length(rates, 1, 1, 4, block=False).accept_length == pytest.approx(1.8)
    # verified tokens: a chain K + 1; a block of `tokens_per_step` drafted in its one step
    assert verified_tokens(3) == 4
    assert verified_tokens(1, tokens_per_step=15) == 16


def test_depth_sweep_of_a_block_drafter_pays_drafting_once_per_round():
    # a 10 ms step (100 tok/s), 4 ms of drafting per step (a block drafter: per round), 1 ms overhead
    params = CostParams(baseline_tps=100.0, draft_step_ms=4.0, round_overhead_ms=1.0)
    rates = [0.8, 0.6, 0.5]
    block = depth_sweep(params, rates, 3, block=True)
    chain = depth_sweep(params, rates, 3)
    assert [(p.steps, p.draft_tokens) for p in block] == [(1, 2), (1, 3), (1, 4)]
    assert [(p.steps, p.draft_tokens) for p in chain] == [(1, 2), (2, 3), (3, 4)]
    # block: every round 10 + 4 + 1 = 15 ms; chain: 10 + 4 d + 1
    assert [p.round_ms for p in block] == pytest.approx([15.0, 15.0, 15.0])
    assert [p.round_ms for p in chain] == pytest.approx([15.0, 19.0, 23.0])
    # tau 1.8, 2.28, 2.52 either way: block 120, 152, 168 tok/s; chain 120, 120, 109.57
    assert [p.tps for p in block] == pytest.approx([120.0, 152.0, 168.0])
    assert [p.tps for p in chain] == pytest.approx([120.0, 120.0, 1000 * 2.52 / 23])
    best = optimal_depth(block)
    assert (best.steps, best.draft_tokens) == (1, 4)


def test_block_prior_is_a_round_cost():
    # Qwen3-8B on one GPU (dense 8B, 8B per GPU: size factor 1), no all-reduce, batch 1, a 10 ms step:
    # DFlash drafts 0.46 of the step's compute once per round, 4.6 ms, whatever its 16 tokens
    facts = DeploymentFacts(gpu="A800", tp_size=1, architecture=TargetArchitecture(8, 8))
    params = resolve_costs({}, facts, 100.0, "dflash", 1, 16)
    assert params.draft_step_ms == pytest.approx(4.6)
    assert round_time(params, 1, 16).draft_ms == pytest.approx(4.6)


@pytest.mark.parametrize(
    "algorithm,drafted,setting",
    [
        ("EAGLE3", 3, (3, 4)),  # vLLM num_speculative_tokens 3: three steps, four verified
        ("DFLASH", 15, (1, 16)),  # vLLM method dflash, 15 speculative tokens: one step of a block of 16
        ("DSPARK", 7, (1, 8)),
        ("unknown", 4, (4, 5)),
        ("EAGLE3", None, (None, None)),
    ],
)
def test_engine_speculative_tokens_become_steps_per_family(algorithm, drafted, setting):
    assert draft_setting(algorithm, drafted) == setting
