"""`specdash schedule --context` on a sweep at two prompt lengths (tests/fixtures/native/context_sweep.jsonl).

The file states its ground truth in its numbers: Llama-3.1-8B on one H100, a plain step of
6 ms x sqrt(1 + (n / 295)^2) over n batched tokens plus 0.05 ms per request and 1,000 tokens of context, EAGLE-3
at K = 3 (4 tokens verified, tau 1.5) drafting 0.4 ms a step and 0.5 ms of overhead, both growing with the
step; prompts of 1,024 and 16,384 tokens with 256 out (mean decode contexts 1,152 and 16,512). From its lines:
at 1,152 tokens and batch 128 the plain step wins (71.87 against 70.61 tok/s); at 16,512 tokens speculation
wins at every batch (146.51 vs 175.93 at 1, 8.91 vs 12.55 at 128). The KV share the truth implies is
0.05 / 6.06 = 0.0083 of the batch-1 step per 1,000 tokens."""

import json

import pytest

from tests.conftest import FIXTURES

SWEEP = FIXTURES / "native" / "context_sweep.jsonl"
TARGET = [
    "--deployment", "1x H100, Llama-3.1-8B, long prompts",
    "--run", "llama31-eagle3-ctx",
    "--checkpoint", "final",
    "--max-steps", "3",
]  # fmt: skip


@pytest.fixture
def sweep_url(db_url, invoke):
    result = invoke(db_url, "ingest", str(SWEEP))
    assert result.exit_code == 0, result.output
    return db_url


def rows_at(invoke, url, *args):
    result = invoke(url, "schedule", *TARGET, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_schedule_answers_per_batch_and_context_with_every_depth_it_considered(sweep_url, invoke):
    rows = rows_at(invoke, sweep_url, "--concurrency", "1,16,64,128", "--context", "1152,16512,64k")
    assert [(r["context_tokens"], r["concurrency"]) for r in rows] == [
        (c, b) for c in (1152, 16512, 64000) for b in (1, 16, 64, 128)
    ]
    for row in rows:
        assert {"num_steps", "tok_s", "aggregate_tok_s", "speedup", "extrapolated", "by_depth"} <= set(row)
        assert [d["num_steps"] for d in row["by_depth"]] == [0, 1, 2, 3]
        picked = next(d for d in row["by_depth"] if d["num_steps"] == row["num_steps"])
        assert picked["tok_s"] == pytest.approx(row["tok_s"], rel=1e-6)
        if "evidence" not in row:  # the pick is the best of the returned curve
            assert row["tok_s"] == pytest.approx(max(d["tok_s"] for d in row["by_depth"]), rel=1e-6)
    at = {(r["context_tokens"], r["concurrency"]): r for r in rows}
    # measured: the plain step wins at 1,152 tokens and batch 128; speculation at every batch at 16,512
    assert at[(1152, 128)]["num_steps"] == 0
    assert all(at[(16512, b)]["num_steps"] > 0 for b in (1, 16, 64, 128))
    # the two measured contexts are not extrapolated; 64k tokens is, and the best depth grows with context
    assert not any(at[(c, b)]["extrapolated"] for c in (1152, 16512) for b in (1, 16, 64, 128))
    assert all(at[(64000, b)]["extrapolated"] for b in (1, 16, 64, 128))
    assert at[(64000, 64)]["num_steps"] >= at[(16512, 64)]["num_steps"] > at[(1152, 128)]["num_steps"]
    # at a measured point the plain step keeps to what was measured there
    plain = {(1152, 128): 71.87, (16512, 128): 8.91, (16512, 1): 146.51}
    for (context, batch), measured in plain.items():
        depth0 = at[(context, batch)]["by_depth"][0]["tok_s"]
        assert depth0 == pytest.approx(measured, rel=0.01)


def test_measured_speculation_is_not_dropped_for_a_prediction_within_its_band(sweep_url, invoke):
    rows = rows_at(invoke, sweep_url, "--concurrency", "16", "--context", "1152")
    # measured 171.16 against 144.29 tok/s at batch 16: speculation, whatever the priors' curve says
    assert rows[0]["num_steps"] > 0


def test_the_text_says_what_is_extrapolated_and_vllm_gets_the_context_axis(sweep_url, invoke):
    text = invoke(sweep_url, "schedule", *TARGET, "--context", "1152,64k").output
    assert "extrapolated: context 64,000 tokens (measured at mean decode context 1,152, 16,512)" in text
    assert "fitted to them" in text
    out = invoke(sweep_url, "schedule", *TARGET, "--context", "1152,16512", "--format", "vllm").output
    config = json.loads(out.split("'")[1])
    cells = config["num_speculative_tokens_per_batch_size"]
    assert all(len(cell) == 5 for cell in cells)
    # every batch range covers every context, from 0 up, once
    for lo in {c[0] for c in cells}:
        spans = sorted((c[2], c[3]) for c in cells if c[0] == lo)
        assert spans[0][0] == 0 and all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:], strict=False))
    trt = invoke(sweep_url, "schedule", *TARGET, "--context", "1152,16512", "--format", "trtllm")
    assert trt.exit_code != 0 and "no context axis" in trt.output


def test_a_bad_context_list_is_refused(sweep_url, invoke):
    result = invoke(sweep_url, "schedule", *TARGET, "--context", "long")
    assert result.exit_code != 0 and "context lengths in tokens" in result.output
