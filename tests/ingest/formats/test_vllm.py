"""vLLM bench serve results and server logs, every version in the fixtures, checked field by field."""

import math
from datetime import datetime

import pytest

from specdash.ingest.formats import detect_format
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.conftest import FIXTURES
from tests.ingest_support import VLLM, benchmarks, load


def test_old_benchmark_serving_result(engine):
    load(engine, VLLM / "bench_serve_0.6.json")
    (bench,) = benchmarks(engine)
    assert bench.source_format == "vllm-bench-serve" and bench.engine == "vllm"
    assert bench.deployment.name == "1x H100, TP1, NVLink"  # --metadata deployment=...
    assert bench.speculative_algorithm is None and bench.checkpoint is None
    assert bench.request_rate == math.inf and bench.concurrency == 8 and bench.num_prompts == 200
    assert bench.decode_tps == pytest.approx(1000 / 12.21) and bench.output_throughput == 647.93
    assert (bench.median_ttft_ms, bench.p99_ttft_ms, bench.p99_tpot_ms, bench.p99_itl_ms) == (
        31.02,
        81.9,
        15.02,
        24.6,
    )
    assert bench.measured_at == datetime(2024, 10, 21, 15, 30, 12)
    assert "request_goodput:" in bench.raw  # the old misspelt key, kept as written


def test_spec_decode_keys_and_metadata(engine):
    load(engine, VLLM / "bench_serve_0.10.json")
    (bench,) = benchmarks(engine)
    assert (bench.speculative_algorithm, bench.num_steps, bench.topk, bench.num_draft_tokens) == (
        "EAGLE3",
        3,
        1,
        4,
    )
    assert bench.accept_length == 2.902 and bench.position_survival == [0.8123, 0.6301, 0.4595]
    assert bench.dataset == "mtbench" and bench.concurrency == 1
    assert bench.decode_tps == pytest.approx(1000 / 6.37) and bench.output_throughput == 157.06
    assert bench.checkpoint.run.name == "llama-eagle3" and bench.checkpoint.name == "epoch_2_step_24000"
    assert "latencies" not in bench.raw and bench.raw["spec_decode_num_drafts"] == 7057


def test_the_depth_under_a_batch_size_schedule_is_the_counters_not_the_rates_length(engine):
    # vLLM PR #48944's replication, static_k3 at 400 tokens: scheduled K=3 of a drafter set up for 4, the
    # fourth position's rate 0.0; 32,640 draft tokens over 10,880 rounds is 3 a round
    name = "gemma4_h100nvl_b256/trial1/static_k3/ctx_400/measure_0.json"
    load(
        engine,
        FIXTURES / "published" / "context" / name,
        IngestPolicy(link=LinkOptions(deployment="H100 NVL")),
    )
    (bench,) = benchmarks(engine)
    assert len(bench.position_survival) == 4 and bench.position_survival[3] == 0.0
    assert (bench.num_steps, bench.num_draft_tokens) == (3, 4)


def test_append_result_is_one_object_a_line(engine):
    result = load(engine, VLLM / "bench_serve_append.jsonl")
    low, high = benchmarks(engine)
    assert [link.line for link in result.store.links] == [1, 2]
    assert low.deployment.name == high.deployment.name == "Llama-3.1-8B-Instruct, vllm"
    assert (low.concurrency, high.concurrency) == (4, 8)
    assert low.decode_tps == pytest.approx(1000 / 7.41) and high.decode_tps == pytest.approx(1000 / 8.55)


def test_v1_log_with_colour_and_process_prefixes(engine):
    load(engine, VLLM / "server_v1.log")
    (bench,) = benchmarks(engine)
    assert bench.source_format == "vllm-log" and bench.engine_version == "0.10.1.1"
    assert bench.deployment.name == "Llama-3.1-8B-Instruct, TP1, vllm"
    assert (bench.speculative_algorithm, bench.num_steps, bench.topk, bench.num_draft_tokens) == (
        "EAGLE3",
        3,
        1,
        4,
    )
    assert bench.drafter_path == "/ckpt/llama-eagle3/epoch_2_step_24000"
    # five intervals at 1 running request, idle ones (0 running) left out; the first ran the prefill
    # (prompt throughput 910.3) and four prefill-free ones remain, so it is left out too
    assert (bench.concurrency, bench.interval_count) == (1, 4)
    assert bench.decode_tps == pytest.approx((150.9 + 151.3) / 2)  # median of 151.3, 149.8, 152.6, 150.9
    assert bench.raw["intervals"]["left_out"] == {"prefill": 1}
    assert bench.raw["intervals"]["server_left_out"] == {"idle": 2}
    drafts = [780 / 3] + [2250 / 3] * 4  # drafted tokens / 3 per draft
    accepted = [452, 1338, 1300, 1361, 1320]
    assert bench.accept_length == pytest.approx(1 + sum(accepted) / sum(drafts))
    first = [0.812, 0.815, 0.801, 0.822, 0.810]
    assert bench.position_survival[0] == pytest.approx(
        sum(r * d for r, d in zip(first, drafts, strict=True)) / sum(drafts)
    )
    assert len(bench.position_survival) == 3


def test_v1_log_in_the_older_draft_acceptance_rate_wording(engine):
    load(engine, VLLM / "server_v1_0.8.log")
    (bench,) = benchmarks(engine)
    assert (bench.speculative_algorithm, bench.num_steps, bench.num_draft_tokens) == ("EAGLE", 2, 3)
    assert bench.deployment.name == "Qwen3-8B, TP2, vllm" and bench.engine_version == "0.8.5"
    # 1000 + 1180 accepted over 1640/2 + 2000/2 drafts; survival only from the interval that reports it
    assert bench.accept_length == pytest.approx(1 + 2180 / 1820)
    assert bench.position_survival == pytest.approx([0.72, 0.5])
    # the first interval follows the start-up: the load began inside it (410 tok/s spread over 10 s of
    # partly idle time), so only the second, 430 tok/s at 4 running, measures the level
    assert (bench.concurrency, bench.decode_tps) == (4, pytest.approx(430 / 4))
    assert bench.raw["intervals"]["left_out"] == {"start": 1}
    assert (bench.checkpoint.run.name, bench.checkpoint.name) == ("qwen3-eagle", "final")


def test_v0_speculative_metrics_are_cumulative(engine):
    load(engine, VLLM / "server_v0.log")
    (bench,) = benchmarks(engine)
    assert (
        bench.engine_version == "0.6.3.post1"
        and bench.deployment.name == "Meta-Llama-3-70B-Instruct, TP4, vllm"
    )
    # the last line's totals: 4860 emitted tokens over 10000 / 5 proposals
    assert bench.accept_length == pytest.approx(4860 / 2000)
    assert (bench.speculative_algorithm, bench.num_steps) == ("unknown", 5)
    # 60.4 tok/s in the first interval after the start-up, where the load began: left out; 62.0 stands
    assert bench.decode_tps == pytest.approx(62.0)
    # a hub id is a published drafter: a run of that name
    assert (bench.checkpoint.run.name, bench.checkpoint.name) == (
        "ibm-fms/llama3-70b-accelerator",
        "published",
    )


@pytest.mark.parametrize(
    "name,expected",
    [
        ("bench_serve_0.6.json", "vllm-bench-serve"),
        ("bench_serve_0.10.json", "vllm-bench-serve"),
        ("bench_serve_append.jsonl", "vllm-bench-serve"),
        ("server_v1.log", "vllm-log"),
        ("server_v1_0.8.log", "vllm-log"),
        ("server_v0.log", "vllm-log"),
    ],
)
def test_detected_without_being_told(name, expected):
    head = (VLLM / name).read_bytes()[:65536].decode()
    assert detect_format(head, name).name == expected


def test_server_starts_of_one_throughput_line_each_are_one_benchmark_each(engine):
    """Four `vllm serve` starts (one per benchmark arm), each killed after one 10-s interval: one `Avg
    generation throughput` line with 7-8 running and prefill in the same window. Each is a benchmark whose
    speed is a lower bound (the load began inside the interval); none is refused. Numbers from the lines."""
    load(
        engine, VLLM / "server_starts_one_line_each.log", IngestPolicy(link=LinkOptions(deployment="1x H100"))
    )
    found = benchmarks(engine)
    assert [(b.speculative_algorithm, b.num_steps, b.num_draft_tokens, b.concurrency) for b in found] == [
        (None, None, None, 8),
        ("EAGLE3", 2, 3, 7),
        ("EAGLE3", 3, 4, 8),
        ("EAGLE3", 4, 5, 7),
    ]
    assert [b.decode_tps for b in found] == pytest.approx([412.3 / 8, 702.8 / 7, 871.5 / 8, 889.4 / 7])
    assert [b.output_throughput for b in found] == pytest.approx([412.3, 702.8, 871.5, 889.4])
    # 1 + accepted / (drafted / k) of each start's one SpecDecoding line
    assert [b.accept_length for b in found[1:]] == pytest.approx(
        [1 + 1187 / (1702 / 2), 1 + 1563 / (2580 / 3), 1 + 1640 / (3212 / 4)]
    )
    assert all(b.raw["intervals"]["lower_bound"] for b in found)
    assert found[0].label == (
        "server log, start 1 of 4 (line 1), 8 running (a lower bound: the load began inside its interval)"
    )


def aggregated_line(pid: int, second: int, tokens_per_s: float, running: int) -> str:
    """A line of vLLM's aggregated stat logger (`--aggregate-engine-logging`, loggers.py's
    AggregatedLoggingStatLogger: the prefix `{n} Engines Aggregated: `, queues summed over its engines)."""
    return (
        f"(APIServer pid={pid}) INFO 05-06 14:22:{second:02d} [loggers.py:259] 1 Engines Aggregated: Avg "
        f"prompt throughput: 0.0 tokens/s, Avg generation throughput: {tokens_per_s} tokens/s, Running: "
        f"{running} reqs, Waiting: 0 reqs, GPU KV cache usage: 3.1%, Prefix cache hit rate: 0.0%\n"
    )


def test_aggregated_lines_of_two_api_servers_in_the_same_second_are_neither_doubled_nor_refused(engine):
    """Two API-server processes each print a `1 Engines Aggregated` line in the same second (as in a
    vllm-ascend deployment with --api-server-count 2): the same engine seen twice, so 4 running stays 4
    (not 8 as two ranks would sum to) and the two speeds are two readings of one interval, not a conflict."""
    speeds = [(120.5, 120.9), (121.0, 121.4), (119.8, 120.2), (120.2, 120.6)]
    text = "".join(
        aggregated_line(pid, 10 + 10 * i, speed, 4)
        for i, pair in enumerate(speeds)
        for pid, speed in zip((101, 202), pair, strict=True)
    )
    assert detect_format(text, "serve.log").name == "vllm-log"
    result = ingest(
        engine, UploadSource("serve.log", text.encode()), IngestPolicy(link=LinkOptions(deployment="2x 910B"))
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    # the median of the eight readings: 120.5 and 120.6 in the middle
    assert bench.concurrency == 4 and bench.output_throughput == pytest.approx((120.5 + 120.6) / 2)
    assert bench.decode_tps == pytest.approx((120.5 + 120.6) / 2 / 4)


def engine_line(pid: int, minute: int, second: int, tokens_per_s: float) -> str:
    return (
        f"(APIServer pid={pid}) INFO 03-02 17:{minute:02d}:{second:02d} [loggers.py:257] Engine 000: Avg prompt "
        f"throughput: 0.0 tokens/s, Avg generation throughput: {tokens_per_s} tokens/s, Running: 1 reqs, "
        "Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 0.0%\n"
    )


START_LINES = {
    # vLLM 0.10-0.26: the version line, then the arguments
    "version": "(APIServer pid={pid}) INFO 03-02 17:35:44 [api_server.py:1272] vLLM API server version 0.11.0\n",
    # 0.27+: a banner instead of the version line; the arguments are the line printed once a start
    "banner": (
        "(APIServer pid={pid}) INFO 08-26 19:27:03 [api_utils.py:345]  version 0.27.1\n"
        "(APIServer pid={pid}) INFO 08-26 19:27:03 [api_utils.py:273] non-default args: "
        "{{'model': 'Qwen/Qwen3-30B-A3B', 'max_num_seqs': 1}}\n"
    ),
}


@pytest.mark.parametrize("wording", sorted(START_LINES))
def test_a_start_that_measured_nothing_gives_its_configuration_to_no_later_start(engine, wording):
    """A TP2 server starts and dies before serving (no throughput line), then a TP4 server of the same
    model starts and serves: its intervals belong to the TP4 start, named by its own line (as in a
    committed GuideLLM harness log, tests/fixtures/real/vllm_log_guidellm_arms_xpu.log)."""
    start = START_LINES[wording]
    text = (
        start.format(pid=7265)
        + "(EngineCore_DP0 pid=8068) INFO 03-02 17:36:09 [core.py:97] Initializing a V1 LLM engine (v0.11.0) "
        "with config: model='Qwen/Qwen3-30B-A3B', speculative_config=None, tensor_parallel_size=2, "
        "quantization=fp8\n"
        + start.format(pid=8511)
        + "(EngineCore_DP0 pid=9181) INFO 03-02 17:41:08 [core.py:97] Initializing a V1 LLM engine (v0.11.0) "
        "with config: model='Qwen/Qwen3-30B-A3B', speculative_config=None, tensor_parallel_size=4, "
        "quantization=fp8\n"
    ) + "".join(engine_line(8511, 43, s, 25.0 + s / 100) for s in (0, 10, 20, 30))
    result = ingest(
        engine, UploadSource("arms.log", text.encode()), IngestPolicy(link=LinkOptions(deployment="4x XPU"))
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    assert bench.raw["config"]["tp_size"] == 4
    # the second start is named by its line printed once a start: the version line, or the arguments
    assert bench.raw["server_start_line"] == {"version": 3, "banner": 5}[wording]
