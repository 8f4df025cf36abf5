"""Plausibility bounds of the shared records: each refused in every format, the refusal naming its bound,
its file, line and field, and the store left as it was."""

import pytest

from specdash.db.records import MAX_INT
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.ingest_support import SGLANG, VLLM, content, load, native

BENCH = {"kind": "benchmark", "deployment": "1x H100", "decode_tps": 100.0}
SPEC = {**BENCH, "speculative_algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "num_draft_tokens": 4}


@pytest.fixture
def used(engine):
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    return engine


@pytest.mark.parametrize(
    "record,expected",
    [
        # accept length: at most min(N, K + 1) = min(4, 4) tokens a round at 3/1/4
        (
            {**SPEC, "accept_length": 9.0},
            "accept_length: 9 is more than a round of 3/1/4 can emit (at most 4: min(draft tokens, steps + 1))",
        ),
        (
            {**SPEC, "accept_length": 0.5},
            "accept_length: Input should be greater than or equal to 1 (got 0.5)",
        ),
        ({**BENCH, "accept_length": 3}, "accept_length: 3 without speculation (a baseline emits exactly 1)"),
        # a tree 5/4/8: K + 1 = 6 is the tighter bound
        (
            {**SPEC, "num_steps": 5, "topk": 4, "num_draft_tokens": 8, "accept_length": 6.5},
            "accept_length: 6.5 is more than a round of 5/4/8 can emit (at most 6: min(draft tokens, steps + 1))",
        ),
        (
            {**BENCH, "decode_tps": 1e9},
            "decode_tps: Input should be less than or equal to 100000 (got 1000000000.0)",
        ),
        (
            {**BENCH, "decode_tps": 1e308},
            "decode_tps: Input should be less than or equal to 100000 (got 1e+308)",
        ),
        (
            {**BENCH, "decode_tps": 1e-9},
            "decode_tps: Input should be greater than or equal to 0.01 (got 1e-09)",
        ),
        ({**BENCH, "decode_tps": True}, "decode_tps: must be a number or text, not true"),
        (
            {**BENCH, "output_throughput": 2e7},
            "output_throughput: Input should be less than or equal to 10000000 (got 20000000.0)",
        ),
        (
            {**BENCH, "median_tpot_ms": 1e300},
            "median_tpot_ms: Input should be less than or equal to 60000 (got 1e+300)",
        ),
        # 1000 / 10 ms = 100 tok/s agrees; 1000 / 1 ms = 1000 tok/s is 10x the stated 100
        (
            {**BENCH, "median_tpot_ms": 1.0},
            "decode_tps: 100 disagrees with median_tpot_ms 1 (1000 / TPOT = 1000 tok/s; a mean and a median of "
            "the rates differ by at most a factor of 2)",
        ),
        ({**BENCH, "median_tpot_ms": 10.0, "p99_tpot_ms": 9.0}, "median_tpot_ms: 10 is above p99_tpot_ms 9"),
        (
            {**SPEC, "position_survival": [0.6, 0.7, 0.2]},
            "position_survival: rises at position 2 (0.6 -> 0.7): a round cannot keep more drafts than fewer",
        ),
        (
            {**BENCH, "concurrency": 2**63},
            f"concurrency: Input should be less than or equal to {MAX_INT} (got {2**63})",
        ),
        (
            {**BENCH, "num_prompts": 1.5},
            "num_prompts: Input should be a valid integer, got a number with a fractional part",
        ),
        ({**BENCH, "deployment": "x" * 201}, "deployment: String should have at most 200 characters"),
        (
            {**BENCH, "drafter_path": "/" + "d" * 1000},
            "drafter_path: String should have at most 1000 characters",
        ),
        ({**BENCH, "label": "a\x00b"}, "label: must not contain NUL characters"),
        (
            {
                "kind": "run",
                "name": "r",
                "started_at": "2025-03-02T10:00:00",
                "ended_at": "2025-03-01T10:00:00",
            },
            "ended_at: 2025-03-01 10:00:00 is before started_at 2025-03-02 10:00:00",
        ),
        (
            {"kind": "deployment", "name": "d", "num_gpus": 4, "tp_size": 8},
            "tp_size: 8 is more than num_gpus 4",
        ),
        (
            {"kind": "deployment", "name": "d", "draft_step_ms": 1e300},
            "draft_step_ms: Input should be less than or equal to 60000 (got 1e+300)",
        ),
        (
            {"kind": "checkpoint", "run": "r", "name": "c", "step": 2**63},
            f"step: Input should be less than or equal to {MAX_INT} (got {2**63})",
        ),
        (
            {"kind": "metrics", "run": "r", "step": 1, "values": {"train/acc_0": True}},
            "values: train/acc_0: must be a number, not true/false",
        ),
    ],
)
def test_native_records_outside_the_bounds_are_refused(used, record, expected):
    before = content(used)
    data = native({"kind": "run", "name": "fine"}, record)
    result = ingest(used, UploadSource("bounds.jsonl", data))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [f"bounds.jsonl:2: {expected}"]
    assert content(used) == before


def _mutate(path, old: str, new: str) -> bytes:
    text = path.read_text()
    assert old in text, old
    return text.replace(old, new, 1).encode()


@pytest.mark.parametrize(
    "path,old,new,expected",
    [
        # SGLang 0.5.9 serves 3/1/4: an average of 9 tokens a round cannot be
        (
            SGLANG / "bench_serving_0.5.9.jsonl",
            '"accept_length": 2.1',
            '"accept_length": 9.0',
            ":1: accept_length: 9 is more than a round of 3/1/4 can emit (at most 4: min(draft tokens, steps + 1))",
        ),
        # vLLM: 1000 / 1e-6 ms TPOT is a billion tok/s per request
        (
            VLLM / "bench_serve_0.10.json",
            '"median_tpot_ms": 6.37',
            '"median_tpot_ms": 1e-06',
            ":1: median_tpot_ms: Input should be greater than or equal to 0.001 (got 1e-06)",
        ),
        # SGLang one-batch: the batch of 1 at 1e9 tok/s
        (
            SGLANG / "bench_one_batch_server.jsonl",
            '"output_throughput": 90.12',
            '"output_throughput": 1e9',
            ":1: decode_tps: Input should be less than or equal to 100000 (got 1000000000.0)",
        ),
    ],
)
def test_engine_formats_get_the_same_bounds(used, path, old, new, expected):
    before = content(used)
    result = ingest(
        used, UploadSource(path.name, _mutate(path, old, new)), IngestPolicy(link=LinkOptions(deployment="d"))
    )
    assert result.status == "failed"
    assert f"{path.name}{expected}" in [str(p) for p in result.problems]
    assert content(used) == before


def test_a_training_log_step_past_the_integer_range_is_refused(used):
    before = content(used)
    data = f"step {2**63}: {{'train/acc_0': 0.5, 'train/loss': 1.0}}\n".encode()
    result = ingest(used, UploadSource("train.log", data), IngestPolicy(format_name="specforge-log"))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [f"train.log:1: step: {2**63} is outside 0..{MAX_INT}"]
    assert content(used) == before
