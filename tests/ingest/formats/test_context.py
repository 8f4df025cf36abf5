"""Each benchmark's context, the mean prompt and output tokens per request, read from every format that
states it. The expected values are worked out by hand from the fixture files (the totals divided by the
completed requests, quoted in each test), never taken from specdash's output."""

import json

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.policy import IngestPolicy
from tests.conftest import FIXTURES
from tests.ingest_support import SGLANG, VLLM, benchmarks, load

BOX = LinkOptions(deployment="test box")
REAL = FIXTURES / "real"
GUIDELLM = FIXTURES / "guidellm"


def lengths(engine) -> list[tuple[float | None, float | None]]:
    """(input, output) tokens per request of every stored benchmark, to 6 decimals (float division)."""
    return [
        tuple(None if value is None else round(value, 6) for value in (b.input_tokens, b.output_tokens))
        for b in benchmarks(engine)
    ]


@pytest.mark.parametrize(
    "path,expected",
    [
        # total_input_tokens 17021, total_output_tokens 19135, completed 64 on both lines
        (SGLANG / "bench_serving_0.5.2.jsonl", [(265.953125, 298.984375)] * 2),
        # 65536 and 32768 over 500 completed: the totals win over random_input_len 1024 / output 512
        (SGLANG / "bench_serving_0.5.23.jsonl", [(131.072, 65.536)]),
        # 3072/3, 1536/3; 6144/6, 3072/6; 8192/8, 4096/8
        (SGLANG / "bench_serving_sweep.jsonl", [(1024.0, 512.0)] * 3),
        # sgl-project/sglang#9585: 1,200,000 and 300,000 tokens over 300 requests
        (REAL / "sglang_bench_serving_pd_mooncake_9585.jsonl", [(4000.0, 1000.0)]),
    ],
)
def test_sglang_bench_serving_divides_its_totals_by_the_completed_requests(engine, path, expected):
    load(engine, path, IngestPolicy(link=BOX))
    assert lengths(engine) == expected


def bench_serving_without_totals(tmp_path, **changes) -> str:
    """0.5.9's record with its token totals taken out, as older versions and hand-trimmed files write it."""
    record = json.loads((SGLANG / "bench_serving_0.5.9.jsonl").read_text())
    del record["total_input_tokens"], record["total_output_tokens"]
    record.update(changes)
    path = tmp_path / "bench_serving.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return str(path)


@pytest.mark.parametrize(
    "changes,expected",
    [
        ({}, (1024.0, 512.0)),  # random, range ratio 1.0: every request 1024 in, 512 out as asked
        ({"dataset_name": "random-ids"}, (1024.0, 512.0)),
        ({"random_range_ratio": 0.5}, (None, None)),  # lengths drawn from 512..1024: the mean is not told
        ({"dataset_name": "sharegpt"}, (None, None)),  # the random lengths are unused defaults
    ],
)
def test_sglang_without_totals_falls_back_to_fixed_random_lengths_only(engine, tmp_path, changes, expected):
    load(engine, bench_serving_without_totals(tmp_path, **changes), IngestPolicy(link=BOX))
    (bench,) = benchmarks(engine)
    assert (bench.input_tokens, bench.output_tokens) == expected
    if expected[0] is not None:
        assert "random_input_len" in bench.raw["specdash_derived"]["context"]


@pytest.mark.parametrize(
    "path,expected",
    [
        # total_input_tokens 9024, total_output_tokens 20480, completed 80
        (VLLM / "bench_serve_0.10.json", [(112.8, 256.0)]),
        # 42659 and 39828 over 200
        (VLLM / "bench_serve_0.6.json", [(213.295, 199.14)]),
        # 4020/10, 11530/10; 8040/20, 22890/20; 8040/20, 22920/20
        (VLLM / "bench_serve_sweep.jsonl", [(402.0, 1153.0), (402.0, 1144.5), (402.0, 1146.0)]),
    ],
)
def test_vllm_bench_serve_divides_its_totals_by_the_completed_requests(engine, path, expected):
    load(engine, path, IngestPolicy(link=BOX))
    assert lengths(engine) == expected


@pytest.mark.parametrize(
    "path,expected",
    [
        # bench_one_batch_server: input_len 1024, output_len 512 on both lines
        (SGLANG / "bench_one_batch_server.jsonl", [(1024.0, 512.0)] * 2),
        (REAL / "sglang_one_batch_server_te_tp4_b805a815.jsonl", [(1024.0, 8.0)] * 3),
        # bench_one_batch: input_len 1024, output_len 256
        (SGLANG / "bench_one_batch.jsonl", [(1024.0, 256.0)] * 2),
        # bench_offline_throughput: 512000 and 256000 tokens over 1000 successful requests
        (SGLANG / "bench_offline_throughput.jsonl", [(512.0, 256.0)]),
    ],
)
def test_sglang_batch_benchmarks_state_their_lengths(engine, path, expected):
    load(engine, path, IngestPolicy(link=BOX))
    assert lengths(engine) == expected


@pytest.mark.parametrize(
    "path",
    [
        GUIDELLM / "benchmarks_stripped_v0.3.1.json",
        REAL / "guidellm_benchmarks_stripped_a1fe883a.json",
        REAL / "guidellm_benchmarks_stripped_v0.3.1.yaml",
    ],
)
def test_guidellm_reads_the_mean_prompt_and_output_tokens(engine, path):
    """metrics.prompt_token_count.successful: total_sum 11827 over count 46; output_token_count: 5888 / 46."""
    load(engine, path, IngestPolicy(link=BOX))
    assert lengths(engine) == [(round(11827 / 46, 6), 128.0)]


def summary(mean: float) -> dict:
    return {"mean": mean, "median": mean, "count": 40, "total_sum": 40 * mean}


def test_guidellm_0_7_token_counts_and_a_zero_that_means_unreported(engine, tmp_path):
    """0.7's GenerativeMetrics carries prompt_token_count and output_token_count too (the hand-written
    fixture leaves them out); a mean of 0 is a backend that reported no usage, not a length."""
    report = json.loads((GUIDELLM / "concurrent_eagle3_v0.7.json").read_text())
    stated = [(1843.5, 412.25), (8192.0, 0.0), None]
    for bench, pair in zip(report["benchmarks"], stated, strict=True):
        if pair is not None:
            bench["metrics"]["prompt_token_count"] = {"successful": summary(pair[0])}
            bench["metrics"]["output_token_count"] = {"successful": summary(pair[1])}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    load(engine, path)
    assert lengths(engine) == [(1843.5, 412.25), (8192.0, None), (None, None)]


def test_a_negative_length_or_total_is_refused_on_its_line(engine, tmp_path):
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.sources import UploadSource
    from tests.ingest_support import native

    result = ingest(
        engine,
        UploadSource(
            "bad.jsonl",
            native({"kind": "benchmark", "deployment": "a", "decode_tps": 50, "input_tokens": -5}),
        ),
    )
    assert [str(p) for p in result.problems] == [
        "bad.jsonl:1: input_tokens: Input should be greater than or equal to 0 (got -5)"
    ]
    record = json.loads((SGLANG / "bench_serving_0.5.9.jsonl").read_text())
    result = ingest(
        engine, UploadSource("neg.jsonl", (json.dumps({**record, "total_input_tokens": -1}) + "\n").encode())
    )
    assert [str(p) for p in result.problems] == [
        "neg.jsonl:1: total_input_tokens: Input should be greater than or equal to 0 (got -1)"
    ]


@pytest.mark.parametrize(
    "name,expected",
    [
        # Successful requests 1000, Total input tokens 301698, Total generated tokens 188375 (not the
        # retokenized count printed below it)
        ("sglang_console_deepseek_ocr2_c100_cookbook.txt", [(301.698, 188.375)]),
        # vllm bench serve: 32 successful, 256000 input and 32768 generated tokens
        ("vllm_console_glm51_mtp_rate10_recipes.txt", [(8000.0, 1024.0)]),
    ],
)
def test_a_printed_result_block_divides_its_totals_by_the_successful_requests(engine, name, expected):
    load(engine, REAL / name, IngestPolicy(link=BOX))
    assert lengths(engine) == expected
