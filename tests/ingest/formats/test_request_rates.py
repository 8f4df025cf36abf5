"""Per request and aggregate never confused; concurrency read, or derived and marked so, never a silent 1.

Expected numbers are worked out here from the fixture records."""

import pytest

from specdash.ingest.describe import describe
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.ingest_support import SGLANG, VLLM, benchmarks, load

H200 = LinkOptions(deployment="8x H200, TP8, NVLink")  # old bench_serving files do not name the server


def test_old_sglang_request_rate_runs_use_itl_and_littles_law(engine):
    result = load(engine, SGLANG / "bench_serving_old_request_rates.jsonl", IngestPolicy(link=H200))
    # the report names the fields each figure came from
    assert "line 1: decode_tps 70.42 from 1000 / median_itl_ms, concurrency 8 from output_throughput / " in (
        describe(result)
    )
    rows = benchmarks(engine)
    assert [b.request_rate for b in rows] == [1.0, 4.0, 16.0, 2.0]
    # no TPOT in these versions: per request = 1000 / median ITL (the aggregate is kept apart)
    assert [b.decode_tps for b in rows[:3]] == pytest.approx([1000 / 14.2, 1000 / 19.8, 1000 / 184.3])
    assert [b.output_throughput for b in rows[:3]] == [540.3, 2051.7, 4190.2]
    # no max_concurrency: in flight = output_throughput / per-request tok/s (Little's law)
    # 540.3 / 70.42 = 7.67; 2051.7 / 50.51 = 40.6; 4190.2 / 5.426 = 772.3
    assert [b.concurrency for b in rows[:3]] == [8, 41, 772]
    assert {b.concurrency_source for b in rows} == {"derived: Little's law"}
    # speculating: a streamed chunk is one verify round, so tokens/s = accept length x 1000 / ITL
    spec = rows[3]
    assert spec.speculative_algorithm == "unknown" and spec.accept_length == 2.6
    assert spec.decode_tps == pytest.approx(2.6 * 1000 / 21.5)
    assert spec.concurrency == round(1210.4 / (2.6 * 1000 / 21.5))  # 10.0
    assert spec.raw["specdash_derived"] == {
        "decode_tps": "accept_length * 1000 / median_itl_ms (ITL per verify round)",
        "concurrency": "output_throughput / per-request tok/s",
    }


def test_vllm_request_rate_runs_are_not_single_request_benchmarks(engine):
    load(engine, VLLM / "bench_serve_request_rates.jsonl")
    ten, thirty, everything = benchmarks(engine)
    assert [b.decode_tps for b in (ten, thirty, everything)] == pytest.approx(
        [1000 / 18.4, 1000 / 41.7, 1000 / 62.3]
    )
    # 10 req/s: 1890.5 / 54.35 = 34.8 in flight; 30 req/s: 3320.9 / 23.98 = 138.5
    assert (ten.concurrency, thirty.concurrency) == (35, 138)
    assert ten.concurrency_source == thirty.concurrency_source == "derived: Little's law"
    # inf with no cap: every one of the 1000 prompts sent at once
    assert (everything.concurrency, everything.concurrency_source) == (1000, "derived: prompt count")
    assert everything.request_rate == float("inf")


def test_a_cap_in_the_file_is_the_concurrency(engine):
    load(engine, VLLM / "bench_serve_append.jsonl")
    assert [(b.concurrency, b.concurrency_source) for b in benchmarks(engine)] == [(4, "file"), (8, "file")]


def test_a_server_log_says_its_concurrency_is_the_running_count(engine):
    load(engine, VLLM / "server_v1.log")
    (bench,) = benchmarks(engine)
    assert (bench.concurrency, bench.concurrency_source) == (1, "log")


def test_no_per_request_speed_and_no_concurrency_is_refused(engine):
    record = (
        b'{"backend": "sglang", "dataset_name": "random", "request_rate": 4.0, "max_concurrency": null, '
        b'"output_throughput": 2051.7, "completed": 1200, "duration": 297.5}\n'
    )
    result = ingest(engine, UploadSource("aggregate_only.jsonl", record), IngestPolicy(link=H200))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        "aggregate_only.jsonl:1: decode_tps: per-request decode cannot be told: no median TPOT or ITL, "
        "and no concurrency to divide the aggregate output_throughput by"
    ]
    assert benchmarks(engine) == []


def test_a_version_outside_the_known_range_is_read_with_a_note(engine):
    record = (
        b'{"backend": "sglang", "dataset_name": "random", "request_rate": 2.0, "max_concurrency": null, '
        b'"server_info": {"model_path": "/models/Llama-3.1-8B-Instruct", "tp_size": 1, "version": "0.4.3.post2"}, '
        b'"output_throughput": 980.0, "median_itl_ms": 12.5, "completed": 600, "duration": 300.2}\n'
    )
    result = ingest(engine, UploadSource("old.jsonl", record))
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    # 1000 / 12.5 = 80 tok/s per request; 980 / 80 = 12.25 in flight
    assert (bench.decode_tps, bench.concurrency) == (80.0, 12)
    assert bench.raw["specdash_derived"]["version"] == (
        "0.4.3.post2 is outside the versions known (0.5.2 to 0.5.23): read from the fields it has"
    )
    assert "(0.4.3.post2 is outside the versions known" in describe(result)


def itl_record(mean_itl_ms: float, median_itl_ms: float) -> bytes:
    """An SGLang bench_serving record without TPOT, speculating (accept length 2.5): 100 requests of 251
    tokens, 5050 ms end to end after a 50 ms TTFT, so 100 x 5000 ms of decode for 25000 tokens, 20 ms each."""
    return (
        b'{"backend": "sglang", "dataset_name": "random", "max_concurrency": 8, "completed": 100, '
        b'"total_output_tokens": 25100, '
        b'"output_throughput": 400.0, "mean_e2e_latency_ms": 5050.0, "mean_ttft_ms": 50.0, '
        b'"mean_itl_ms": %.1f, "median_itl_ms": %.1f, "accept_length": 2.5}\n' % (mean_itl_ms, median_itl_ms)
    )


@pytest.mark.parametrize(
    "mean_itl_ms, median_itl_ms, tokens_an_entry",
    [
        (20.0, 19.0, 1.0),  # 20 ms a token: the client spread each chunk's gap over its tokens
        (50.0, 47.5, 2.5),  # 2.5 x 20 ms: one gap a streamed chunk, 25000 x 50 / 500000 = 2.5 tokens each
    ],
)
def test_an_itl_entry_counts_the_tokens_the_run_means_give_it(
    engine, mean_itl_ms, median_itl_ms, tokens_an_entry
):
    """Without TPOT, per-request decode is 1000 / median ITL times the tokens an ITL entry stands for,
    measured from the record's own means, not assumed to be the accept length (sglang#9588's native
    client prints per-token ITL while speculating)."""
    result = ingest(
        engine, UploadSource("itl.jsonl", itl_record(mean_itl_ms, median_itl_ms)), IngestPolicy(link=H200)
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    assert bench.decode_tps == pytest.approx(tokens_an_entry * 1000 / median_itl_ms)
