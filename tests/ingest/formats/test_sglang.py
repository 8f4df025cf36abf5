"""SGLang results and logs, every version in the fixtures, checked field by field."""

import math

import pytest
from sqlalchemy import select

from specdash.db.engine import make_engine, reading
from specdash.db.models import Checkpoint, Gap, Run
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import PathSource
from tests.ingest_support import SGLANG, benchmarks, content, load

PCIE = "8x RTX PRO 6000, TP8, PCIe"


def test_bench_serving_0_5_2_without_server_info(engine):
    load(engine, SGLANG / "bench_serving_0.5.2.jsonl", IngestPolicy(link=LinkOptions(deployment="1x H100")))
    base, spec = benchmarks(engine)
    assert base.source_format == "sglang-bench-serving" and base.engine == "sglang"
    assert base.speculative_algorithm is None and base.accept_length is None and base.checkpoint is None
    assert base.request_rate == math.inf  # the bare token Infinity: every request sent at once
    assert (base.concurrency, base.dataset, base.num_prompts) == (1, "sharegpt", 64)
    assert base.decode_tps == pytest.approx(1000 / 11.1)  # per request, from the median TPOT
    assert base.output_throughput == 89.9459  # aggregate, kept as written
    assert (base.median_tpot_ms, base.p99_tpot_ms, base.median_ttft_ms, base.p99_ttft_ms) == (
        11.1,
        11.61,
        45.92,
        71.86,
    )
    assert (base.median_itl_ms, base.p99_itl_ms) == (11.05, 14.2)
    # no server_info in 0.5.2: speculation shows only in the accept length, the algorithm is unknown
    assert spec.speculative_algorithm == "unknown" and spec.accept_length == 2.1
    assert spec.decode_tps == pytest.approx(1000 / 12.15) and spec.checkpoint is None
    assert "server_info" not in spec.raw and spec.raw["request_rate"] == "inf"


def test_bench_serving_0_5_9_lands_as_the_story_alert(demo_url):
    """The seed's benchmark as SGLang writes it: EAGLE served for an EAGLE3 drafter, flagged on arrival."""
    engine = make_engine(demo_url)
    result = load(
        engine, SGLANG / "bench_serving_0.5.9.jsonl", IngestPolicy(link=LinkOptions(deployment=PCIE))
    )
    assert result.store.linked == 1 and result.store.links[0].how == "by path"
    (bench,) = benchmarks(engine, source_format="sglang-bench-serving")
    assert (bench.checkpoint.run.name, bench.checkpoint.name) == ("k25-eagle3-10k", "epoch_3")
    assert (bench.speculative_algorithm, bench.num_steps, bench.topk, bench.num_draft_tokens) == (
        "EAGLE",
        3,
        1,
        4,
    )
    assert (bench.engine_version, bench.label, bench.dataset) == ("0.5.9", "pcie-eagle", "random")
    assert bench.decode_tps == pytest.approx(82.30, abs=0.01) and bench.output_throughput == 81.27
    assert bench.drafter_path == "/ckpt/k25-eagle3-10k/epoch_3" and bench.accept_length == 2.1
    with reading(engine) as session:
        gap = session.scalar(select(Gap).where(Gap.benchmark_id == bench.id))
        assert gap.predicted_tps == pytest.approx(161.0, abs=0.5)
        assert "algorithm_mismatch" in [d["code"] for d in gap.diagnoses] and gap.severity == "critical"


def test_bench_serving_0_5_23_reads_the_decode_server_of_pd_disaggregation(engine):
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    (bench,) = benchmarks(engine)
    assert bench.deployment.name == "Llama-3.1-8B-Instruct, TP2, sglang"  # named from server_info
    assert (bench.speculative_algorithm, bench.num_steps, bench.topk, bench.num_draft_tokens) == (
        "EAGLE3",
        5,
        1,
        6,
    )
    assert bench.checkpoint.run.name == "llama-eagle3" and bench.checkpoint.name == "epoch_2_step_24000"
    assert (bench.checkpoint.epoch, bench.checkpoint.step) == (2, 24000)
    assert bench.concurrency == 8  # no --max-concurrency: the measured mean in flight, 7.62, rounded
    assert bench.request_rate == 4.0 and bench.engine_version == "0.5.23" and bench.accept_length == 3.42
    assert bench.decode_tps == pytest.approx(1000 / 6.9)


def test_one_batch_server_minus_one_is_unknown(demo_url):
    engine = make_engine(demo_url)
    link = LinkOptions(run="k25-eagle3-100k-ttt5", checkpoint="epoch_5", deployment=PCIE)
    load(engine, SGLANG / "bench_one_batch_server.jsonl", IngestPolicy(link=link))
    base, spec = benchmarks(engine, source_format="sglang-one-batch")
    assert base.accept_length is None and base.speculative_algorithm is None  # acc_length -1
    assert (base.concurrency, base.decode_tps, base.output_throughput) == (1, 90.12, 90.12)
    assert base.dataset == "random 1024/512" and base.label == "baseline"
    assert spec.concurrency == 8 and spec.decode_tps == pytest.approx(1134.4 / 8)
    # the file does not name the algorithm: the linked run's stands in
    assert spec.speculative_algorithm == "EAGLE3" and spec.accept_length == 2.87
    assert spec.checkpoint.name == "epoch_5"


def test_offline_throughput_is_aggregate_over_every_prompt(engine):
    load(
        engine,
        SGLANG / "bench_offline_throughput.jsonl",
        IngestPolicy(link=LinkOptions(deployment="1x H100")),
    )
    (bench,) = benchmarks(engine)
    assert (bench.concurrency, bench.num_prompts, bench.dataset) == (1000, 1000, "offline")
    assert bench.output_throughput == 5659.96 and bench.decode_tps == pytest.approx(5.65996)


@pytest.mark.parametrize("name", ["bench_one_batch_server.jsonl", "bench_offline_throughput.jsonl"])
def test_a_file_without_a_deployment_asks_for_one(engine, name):
    before = content(engine)
    result = ingest(engine, PathSource(SGLANG / name))
    assert result.status == "failed"
    assert str(result.problems[0]) == (
        f"{SGLANG / name}:1: deployment: the file does not say which deployment it measured; "
        "pass --deployment NAME"
    )
    assert content(engine) == before


def test_server_log_0_5_2_summarises_decode_intervals(engine):
    load(engine, SGLANG / "server_0.5.2.log")
    (bench,) = benchmarks(engine)
    assert bench.source_format == "sglang-log" and bench.label == "server log, 1 running"
    assert bench.deployment.name == "Llama-3.1-8B-Instruct, TP1, sglang"  # from the server_args line
    assert (bench.speculative_algorithm, bench.num_steps, bench.topk, bench.num_draft_tokens) == (
        "EAGLE3",
        3,
        1,
        4,
    )
    # six intervals held at #running-req 1; the first follows the Prefill batch line (its 35.2 tok/s
    # includes the prefill) and five prefill-free ones remain, so it is left out; the single interval
    # at 2 requests never holds and is a ramp
    assert (bench.concurrency, bench.interval_count) == (1, 5)
    assert bench.output_throughput == pytest.approx(140.33)  # median of 139.52, 141.1, 140.33, 138.9, 142.05
    assert bench.decode_tps == pytest.approx(140.33)
    assert bench.accept_length == pytest.approx(2.91)  # median of 2.91, 2.95, 2.88, 2.93, 2.90
    # spread: inclusive p10/p90 of [138.9, 139.52, 140.33, 141.1, 142.05]
    assert bench.decode_tps_p10 == pytest.approx(138.9 + 0.4 * (139.52 - 138.9))
    assert bench.decode_tps_p90 == pytest.approx(141.1 + 0.6 * (142.05 - 141.1))
    assert bench.raw["intervals"]["left_out"] == {"prefill": 1}
    assert bench.raw["intervals"]["server_left_out"] == {"ramp": 1}
    assert bench.checkpoint.path == "/ckpt/llama-eagle3/epoch_2_step_24000"


def test_server_log_0_5_9_adds_up_data_parallel_ranks(engine):
    load(engine, SGLANG / "server_0.5.9.log")
    (bench,) = benchmarks(engine)
    assert bench.deployment.name == "Kimi-K2.5, TP8, sglang"
    assert (bench.speculative_algorithm, bench.num_steps, bench.num_draft_tokens) == ("EAGLE3", 5, 6)
    assert bench.concurrency == 8  # 4 running on each of DP0 and DP1
    # DP0's first interval holds the prefill logged before it: left out (five prefill-free ones remain);
    # the sum of each rank's median: DP0 (515.02, 530.40), DP1 (498.20, 505.60, 501.30)
    assert bench.output_throughput == pytest.approx((515.02 + 530.40) / 2 + 501.30)
    assert bench.decode_tps == pytest.approx(((515.02 + 530.40) / 2 + 501.30) / 8)
    # median accept len of the five used intervals: 3.05, 3.12, 2.98, 3.01, 3.00
    assert bench.accept_length == pytest.approx(3.01) and bench.interval_count == 5
    # DP0 at 3 running (7 in all) after a request finished, never held: the ramp-down
    assert bench.raw["intervals"]["left_out"] == {"prefill": 1}
    assert bench.raw["intervals"]["server_left_out"] == {"ramp": 1}
    assert bench.raw["skipped_lines"] == 1  # the cut-off last line
    with reading(engine) as session:
        assert session.scalar(select(Run.name)) == "k25-eagle3-100k-ttt5"
        assert session.scalar(select(Checkpoint.name)) == "epoch_5"


def test_a_prefill_decode_disaggregated_run_is_stored_with_its_own_numbers(engine):
    """SGLang bench_serving of a 1P1D deployment, 64 concurrent, 512 in / 128 out: the prefill server queues
    (median TTFT 17.5 s), so the aggregate, 437.5 tok/s, is far below per-request decode x concurrency (1000 /
    9.2 ms x 64 = 6,957 tok/s, a factor of 15.9). Nothing bounds an aggregate from below: it is stored."""
    load(engine, SGLANG / "bench_serving_pd_64.jsonl", IngestPolicy(link=LinkOptions(deployment="1P1D H100")))
    (bench,) = benchmarks(engine)
    assert bench.decode_tps == pytest.approx(1000 / 9.2)
    assert (bench.concurrency, bench.output_throughput, bench.accept_length) == (64, 437.5, 2.17)
    assert (bench.num_steps, bench.topk, bench.num_draft_tokens, bench.num_prompts) == (3, 1, 4, 640)
    assert bench.median_ttft_ms == 17532.0


def test_the_disaggregated_run_pasted_in_sglang_issue_9585(engine):
    """A real bench_serving line (1P1D over mooncake, 32 concurrent, 4000 in / 1000 out): per request 1000 /
    49.4525 ms = 20.22 tok/s, aggregate 470.75 tok/s, TTFT 15.8 s."""
    load(
        engine,
        SGLANG.parent / "real" / "sglang_bench_serving_pd_mooncake_9585.jsonl",
        IngestPolicy(link=LinkOptions(deployment="1P1D")),
    )
    (bench,) = benchmarks(engine)
    assert bench.decode_tps == pytest.approx(1000 / 49.45251944893692)
    assert (bench.concurrency, bench.num_prompts, bench.speculative_algorithm) == (32, 300, None)
    assert bench.output_throughput == pytest.approx(470.75469529455864)
