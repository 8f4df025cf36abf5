"""The KV term of costmodel/context.py, worked by hand."""

import json

import pytest

from specdash.costmodel.context import (
    DEFAULT_CONTEXT_TOKENS,
    GENERIC_KV_SHARE,
    ContextModel,
    ContextPoint,
    SlidingWindow,
    context_model,
    decode_context,
    kv_share_prior,
    kv_tokens,
    sliding_window,
)
from specdash.costmodel.priors import architecture_for
from specdash.costmodel.schedule import ScheduleEntry, context_ranges, vllm_context_config


def test_a_request_decodes_at_its_prompt_plus_half_its_output():
    assert decode_context(1024, 512) == 1280
    assert decode_context(8000, None) == 8000
    assert decode_context(None, 512) is None


def test_the_prior_is_a_tokens_kv_bytes_over_the_weight_bytes_a_step_reads():
    # Llama-3.1-8B: 32 layers x (2 x 8 heads x 128 x 2 bytes) = 131,072 bytes a token; 16e9 weight bytes
    llama = architecture_for("meta-llama/Llama-3.1-8B-Instruct")
    assert kv_share_prior(llama) == pytest.approx(1000 * 131_072 / 16e9)
    # half of a TP step in all-reduce: the KV read is a share of the other half
    assert kv_share_prior(llama, comm_fraction=0.5) == pytest.approx(0.5 * 1000 * 131_072 / 16e9)
    # Qwen3-235B-A22B: 94 layers x 2,048 bytes against 22B active parameters
    assert kv_share_prior(architecture_for("Qwen/Qwen3-235B-A22B")) == pytest.approx(1000 * 94 * 2048 / 44e9)
    # a dense model of known size alone: the generic share scaled by sqrt(8 / size)
    assert kv_share_prior(architecture_for("acme-32b")) == pytest.approx(GENERIC_KV_SHARE * 0.5)
    assert kv_share_prior(None) == GENERIC_KV_SHARE


def test_sliding_window_layers_stop_adding_to_the_read_at_their_window():
    # Gemma-4-31B: 10 full-attention layers of 8,192 bytes a token; 50 windowed ones of 16,384 over 1,024
    gemma = architecture_for("prithivMLmods/gemma-4-31B-it-qat-FP8")
    window = sliding_window(gemma)
    assert window == SlidingWindow(1024, 50 * 16384 / (10 * 8192)) and window.ratio == 10
    assert kv_share_prior(gemma) == pytest.approx(1000 * 10 * 8192 / 62e9)  # the full layers' share
    # below the window every layer's read grows (11 full-layer tokens a token), above it the full layers'
    assert kv_tokens(500, window) == 500 + 10 * 500 and kv_tokens(4096, window) == 4096 + 10 * 1024
    assert kv_tokens(4096, None) == 4096 and sliding_window(architecture_for("Llama-3.1-8B")) is None
    model = ContextModel(0.01, 1000, True, False, (1000,), window=SlidingWindow(1024, 10))
    # T1 = 5 ms, batch 2: 1,000 -> 9,000 tokens adds 24 windowed + 8,000 full tokens (8,240 in all)
    assert model.moved(20.0, 5.0, 2, 9000) == pytest.approx(20.0 + 5 * 0.01 * 2 * 8.24)


def test_a_longer_context_moves_the_step_and_the_round_alike_and_never_below_the_weights():
    model = ContextModel(kv_share=0.01, reference_tokens=1000, stated=True, fitted=False, measured=(1000,))
    # T1 = 5 ms; at batch 32 and 9,000 tokens each request reads 8,000 more: 5 x 0.01 x 32 x 8 = 12.8 ms
    assert model.moved(20.0, 5.0, 32, 9000) == pytest.approx(32.8)
    assert model.moved(20.0, 5.0, 32, None) == 20.0
    # a shorter context takes away at most the reference's KV read: 5 x 0.01 x 32 x 1 = 1.6 ms
    assert model.moved(20.0, 5.0, 32, 0) == pytest.approx(18.4)
    assert model.extrapolated(9000) and not model.extrapolated(1100)
    unstated = context_model([], 0.01)
    assert unstated.reference_tokens == DEFAULT_CONTEXT_TOKENS and unstated.extrapolated(1000)


def test_the_kv_share_is_fitted_once_two_contexts_are_measured():
    # rounds measured at 1k and 9k tokens, made with kv = 0.02 around a reference of 5k; prior 0.005
    truth, step = 0.02, 4.0
    points = []
    for batch in (1, 8, 32):
        for context in (1000, 9000):
            at_reference = 10.0 + batch * 0.2
            shift = step * truth * batch * (context - 5000) / 1000
            points.append(ContextPoint(batch, context, step, at_reference + shift, at_reference))
    fitted = context_model([1000, 9000] * 3, 0.005, points)
    assert fitted.fitted and fitted.reference_tokens == 5000
    assert fitted.kv_share == pytest.approx(truth, rel=0.05)
    # one context: nothing to fit, the prior stays
    assert context_model([1000] * 3, 0.005, points).kv_share == 0.005


def test_context_ranges_meet_at_geometric_midpoints_and_cover_every_length():
    assert context_ranges([1000, 8000, 32000]) == [(0, 2828), (2829, 16000), (16001, 10_000_000)]


def _entry(batch, context, steps):
    return ScheduleEntry(batch, steps, 1.0, 1.0, batch, 1.0, False, context_tokens=context)


def test_vllm_gets_five_item_ranges_with_one_batch_split_shared_by_every_context():
    # short prompts stop paying at batch 64; at 32k tokens speculation still pays there
    entries = [
        _entry(1, 1000, 4), _entry(16, 1000, 2), _entry(64, 1000, 0),
        _entry(1, 32000, 5), _entry(16, 32000, 4), _entry(64, 32000, 3),
    ]  # fmt: skip
    config = json.loads(vllm_context_config(entries, "eagle3").split("'")[1])
    assert config["num_speculative_tokens"] == 5
    assert config["num_speculative_tokens_per_batch_size"] == [
        [1, 4, 0, 5656, 4],
        [1, 4, 5657, 10_000_000, 5],
        [5, 32, 0, 5656, 2],
        [5, 32, 5657, 10_000_000, 4],
        [33, 4096, 0, 5656, 0],
        [33, 4096, 5657, 10_000_000, 3],
    ]
    # one context: the batch-only 3-item form
    single = json.loads(vllm_context_config(entries[:3], "eagle3").split("'")[1])
    assert single["num_speculative_tokens_per_batch_size"] == [[1, 4, 4], [5, 32, 2], [33, 4096, 0]]


def test_context_lengths_are_read_once_for_the_cli_and_the_page():
    from specdash.costmodel.context import parse_contexts

    assert parse_contexts("32k, 1000,8K,1k") == (1000.0, 8000.0, 32000.0)
    assert parse_contexts("") == ()
    for bad, says in (
        ("long", "context lengths in tokens"),
        ("-5", "between 0 and"),
        ("1e9", "between 0 and"),
    ):
        with pytest.raises(ValueError, match=says):
            parse_contexts(bad)
