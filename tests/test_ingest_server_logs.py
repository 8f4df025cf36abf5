"""Server logs split where the world changed: per server start, per load level, steady intervals only.

Every expected number is worked out here from the lines of the fixture it reads."""

import statistics

import pytest

from specdash.ingest.pipeline import describe
from tests.ingest_support import VLLM, benchmarks, load

DRAFTER = "/data/drafters/llama31-eagle3/epoch_3"


def weighted(rates: list[float], drafted: list[int]) -> float:
    """A per-position rate over intervals, weighted by each interval's drafts (drafted tokens / k)."""
    return sum(r * d for r, d in zip(rates, drafted, strict=True)) / sum(drafted)


def test_a_pipeline_of_six_server_starts_is_six_benchmarks(engine):
    result = load(engine, VLLM / "pipeline_six_servers.log")
    rows = benchmarks(engine)
    assert len(rows) == 6
    plain, fp8 = "Llama-3.1-8B-Instruct, TP1, vllm", "Llama-3.1-8B-Instruct, TP1, fp8, vllm"
    assert [b.deployment.name for b in rows] == [plain, plain, fp8, fp8, fp8, fp8]
    assert [b.speculative_algorithm for b in rows] == [None, "EAGLE3", None, "EAGLE3", "EAGLE3", "EAGLE3"]
    assert [b.num_steps for b in rows] == [None, 2, None, 1, 2, 3]
    assert [b.drafter_path for b in rows] == [None, DRAFTER, None, DRAFTER, DRAFTER, DRAFTER]
    assert all(b.concurrency == 1 for b in rows)
    # Each start: six intervals at 1 running; the 1st and 4th ran a prefill (prompt throughput > 0) and
    # the 6th is the tail (Running: 0); three prefill-free intervals remain, the 2nd, 3rd and 5th.
    clean = [
        [93.4, 94.1, 93.8],
        [151.0, 148.2, 150.4],
        [131.5, 132.2, 131.9],
        [171.3, 170.8, 172.0],
        [190.4, 188.8, 191.0],
        [185.2, 186.0, 184.9],
    ]
    for bench, values in zip(rows, clean, strict=True):
        assert bench.decode_tps == pytest.approx(statistics.median(values))
        assert bench.output_throughput == pytest.approx(statistics.median(values))
        assert bench.interval_count == 3
        assert bench.raw["intervals"]["left_out"] == {"prefill": 2, "tail": 1}
        assert bench.raw["intervals"]["server_left_out"] == {"idle": 1}
    # EAGLE3 k=2: accept length over all six intervals, 1 + accepted / (drafted / 2)
    accepted, drafted = [402, 768, 752, 700, 760, 350], [520, 1000, 1000, 920, 1000, 460]
    assert rows[1].accept_length == pytest.approx(1 + sum(accepted) / (sum(drafted) / 2))
    assert rows[1].position_survival == pytest.approx(
        [
            weighted([0.801, 0.800, 0.792, 0.790, 0.795, 0.800], drafted),
            weighted([0.745, 0.736, 0.712, 0.732, 0.725, 0.722], drafted),
        ]
    )
    # FP8 + EAGLE3 k=1: drafts = drafted tokens
    accepted, drafted = [320, 660, 650, 600, 665, 300], [400, 830, 820, 760, 835, 380]
    assert rows[3].accept_length == pytest.approx(1 + sum(accepted) / sum(drafted))
    assert rows[0].accept_length is None and rows[2].accept_length is None
    # one line per benchmark in the report, saying what it used and left out
    assert rows[1].label == "server log, start 2 of 6 (line 15), 1 running"
    text = describe(result)
    assert (
        "line 6 (server log, start 1 of 6 (line 1), 1 running): 3 interval(s) used at 1 running; "
        "left out 2 with a prefill in them, 1 tail (running 0, tokens generated); "
        "in no benchmark of this server start: 1 idle"
    ) in text


def test_a_concurrency_sweep_is_one_benchmark_per_load_level(engine):
    load(engine, VLLM / "server_concurrency_sweep.log")
    low, mid, high = benchmarks(engine)
    assert [b.concurrency for b in (low, mid, high)] == [1, 2, 4]
    # c=1: intervals 4-11 of the log; the 8th (Running: 0, tokens generated) is a tail; 3 of the 7 at
    # 1 running ran a prefill and 4 prefill-free ones remain: 152.1, 150.7, 151.5, 148.8
    assert low.decode_tps == pytest.approx((150.7 + 151.5) / 2)
    assert low.raw["intervals"]["left_out"] == {"prefill": 3, "tail": 1}
    # c=2: from the change to 2 running to the last interval held at 2; one snapshot at 1 running is off
    # the level; of the seven at 2, the four prefill-free: 290.5, 288.1, 289.9, 287.6
    assert mid.decode_tps == pytest.approx((288.1 + 289.9) / 2 / 2)
    assert mid.output_throughput == pytest.approx((288.1 + 289.9) / 2)
    assert mid.raw["intervals"]["left_out"] == {"prefill": 3, "off-level": 1}
    # c=4: five of six intervals ran a prefill, so they are kept (only one is prefill-free)
    at_four = [301.5, 520.3, 515.8, 522.1, 531.0, 518.4]
    assert high.output_throughput == pytest.approx(statistics.median(at_four))
    assert high.decode_tps == pytest.approx(statistics.median(at_four) / 4)
    assert high.raw["intervals"]["prefill_kept"] == 5
    assert high.raw["intervals"]["left_out"] == {"tail": 1}
    # not in any benchmark: the test request before the sweep (brief: one busy interval and its tail),
    # the ramp-down interval at 3 running, and two idle lines
    assert high.raw["intervals"]["server_left_out"] == {"brief": 2, "ramp": 1, "idle": 2}
    # accepted = 0.6, 0.55 and 0.5 of drafted tokens at each level, k = 3
    assert [b.accept_length for b in (low, mid, high)] == pytest.approx(
        [1 + 3 * 0.6, 1 + 3 * 0.55, 1 + 3 * 0.5]
    )


def test_log_figures_are_within_a_quarter_of_what_the_client_measured(engine):
    """The same sweep as the benchmark client saw it (vllm bench serve --append-result)."""
    load(engine, VLLM / "server_concurrency_sweep.log")
    load(engine, VLLM / "bench_serve_sweep.jsonl")
    logs = {b.concurrency: b for b in benchmarks(engine, source_format="vllm-log")}
    clients = {b.concurrency: b for b in benchmarks(engine, source_format="vllm-bench-serve")}
    assert sorted(logs) == sorted(clients) == [1, 2, 4]
    # client per request: 1000 / median TPOT of 6.71, 7.02 and 7.83 ms
    assert [clients[c].decode_tps for c in (1, 2, 4)] == pytest.approx(
        [1000 / 6.71, 1000 / 7.02, 1000 / 7.83]
    )
    for c in (1, 2, 4):
        assert abs(logs[c].decode_tps / clients[c].decode_tps - 1) < 0.25
        assert abs(logs[c].accept_length / clients[c].accept_length - 1) < 0.25
