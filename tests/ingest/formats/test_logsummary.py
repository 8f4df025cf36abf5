"""Server logs split where the world changed: per server start, per load level, steady intervals only.

Every expected number is worked out here from the lines of the fixture it reads."""

import statistics

import pytest
from sqlalchemy import select

from specdash.db.engine import reading
from specdash.db.models import Prediction
from specdash.ingest.describe import describe
from tests.ingest_support import SGLANG, VLLM, benchmarks, load

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
    # c=4: five of six intervals ran a prefill, too many to leave out; the ones with the least prefill are
    # used: prompt tok/s 1203.3, 810.0, 790.2, 802.5, 0.0, 799.9 have a lower quartile (inclusive) of
    # 790.2 + 0.25 * (799.9 - 790.2); at or below it: 0.0 (531.0 tok/s) and 790.2 (515.8 tok/s)
    assert high.output_throughput == pytest.approx((531.0 + 515.8) / 2)
    assert high.decode_tps == pytest.approx((531.0 + 515.8) / 2 / 4)
    assert high.raw["intervals"]["prefill_kept"] == 1
    assert high.raw["intervals"]["left_out"] == {"tail": 1, "more-prefill": 4}
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


def test_an_sglang_sweep_is_one_benchmark_per_load_level(engine):
    load(engine, SGLANG / "server_concurrency_sweep.log")
    one, two, four = benchmarks(engine)
    assert [b.concurrency for b in (one, two, four)] == [1, 2, 4]
    assert {b.drafter_path for b in (one, two, four)} == {"/ckpt/llama31-eagle3-sharegpt/epoch_2"}
    # c=1: 11 Decode batch lines; the 3 that follow a Prefill batch line (60.4, 118.3, 120.1) are left out
    at_one = [139.5, 140.2, 141.0, 139.8, 140.6, 138.9, 140.9, 139.4]
    assert one.decode_tps == pytest.approx(statistics.median(at_one))
    assert one.accept_length == pytest.approx(
        statistics.median([2.91, 2.88, 2.95, 2.90, 2.93, 2.87, 2.92, 2.89])
    )
    assert one.raw["intervals"]["left_out"] == {"prefill": 3}
    # c=2: 8 lines at 2 running, 3 after a prefill; the single line at 1 running before c=4 is a ramp
    at_two = [262.0, 259.8, 261.2, 258.9, 260.5]
    assert two.output_throughput == pytest.approx(statistics.median(at_two))
    assert two.decode_tps == pytest.approx(statistics.median(at_two) / 2)
    # c=4: 4 of 8 prefill-free; the ramp-down at 3, 2 and 1 running is in no benchmark
    at_four = [470.1, 468.8, 472.3, 469.5]
    assert four.decode_tps == pytest.approx(statistics.median(at_four) / 4)
    assert four.accept_length == pytest.approx(statistics.median([2.80, 2.79, 2.81, 2.78]))
    assert four.raw["intervals"]["server_left_out"] == {"ramp": 4}


def test_sglang_log_figures_are_within_a_quarter_of_the_clients(engine):
    load(engine, SGLANG / "server_concurrency_sweep.log")
    load(engine, SGLANG / "bench_serving_sweep.jsonl")
    logs = {b.concurrency: b for b in benchmarks(engine, source_format="sglang-log")}
    clients = {b.concurrency: b for b in benchmarks(engine, source_format="sglang-bench-serving")}
    # client per request: 1000 / median TPOT of 7.25, 7.81 and 8.62 ms
    assert [clients[c].decode_tps for c in (1, 2, 4)] == pytest.approx(
        [1000 / 7.25, 1000 / 7.81, 1000 / 8.62]
    )
    for c in (1, 2, 4):
        assert abs(logs[c].decode_tps / clients[c].decode_tps - 1) < 0.25
        assert logs[c].deployment.name == clients[c].deployment.name == "Llama-3.1-8B-Instruct, TP1, sglang"


def test_intervals_past_the_cap_are_counted_and_left_out(engine, monkeypatch):
    from specdash.ingest.formats import logsummary

    monkeypatch.setattr(logsummary, "MAX_INTERVALS", 5)  # each start keeps its first five intervals
    load(engine, VLLM / "pipeline_six_servers.log")
    rows = benchmarks(engine)
    assert len(rows) == 6
    # five intervals kept per start (three prefill-free, two with a prefill); the tail and the idle line
    # past the cap are counted, not read
    assert {b.raw["intervals"]["server_left_out"]["cap"] for b in rows} == {2}
    assert rows[0].decode_tps == pytest.approx(statistics.median([93.4, 94.1, 93.8]))


def test_specdash_ingest_on_a_pipeline_of_servers_and_loads(invoke, db_url, engine):
    """Two server starts in one log: EAGLE3 at 1, 2 and 4 running (the sweep), then the target alone at
    1 and 4 running; each speculative benchmark is predicted against the baseline at its own load."""
    result = invoke(db_url, "ingest", str(VLLM / "pipeline_servers_and_loads.log"))
    assert result.exit_code == 0, result.output
    assert "5 record(s) as vllm-log; created 5 benchmark(s)" in result.output
    rows = benchmarks(engine)
    assert [(b.speculative_algorithm, b.concurrency) for b in rows] == [
        ("EAGLE3", 1),
        ("EAGLE3", 2),
        ("EAGLE3", 4),
        (None, 1),
        (None, 4),
    ]
    # the baseline start: two of six intervals ran a prefill at each level, four prefill-free remain
    assert rows[3].decode_tps == pytest.approx(statistics.median([96.2, 95.8, 96.5, 95.1]))
    assert rows[4].decode_tps == pytest.approx(statistics.median([371.2, 369.9, 372.4, 370.6]) / 4)
    assert rows[3].label == "server log, start 2 of 2 (line 59), 1 running"
    with reading(engine) as session:
        baselines = dict(session.execute(select(Prediction.concurrency, Prediction.baseline_tps)).all())
    assert baselines[1] == pytest.approx(rows[3].decode_tps)
    assert baselines[4] == pytest.approx(rows[4].decode_tps)


def test_the_upload_preview_shows_what_each_benchmark_used(engine):
    from specdash.app import uploads
    from specdash.ingest.pipeline import preview_ingest
    from specdash.ingest.sources import UploadSource

    data = (VLLM / "server_concurrency_sweep.log").read_bytes()
    frame = uploads.links_frame(preview_ingest(engine, UploadSource("server.log", data)))
    assert frame["line"].tolist() == [10, 26, 42]
    assert (
        frame["notes"]
        .iloc[1]
        .startswith("4 interval(s) used at 2 running; left out 3 with a prefill in them")
    )


def test_a_request_rate_run_is_one_level_at_its_median_running_count(engine):
    from specdash.ingest.links import LinkOptions
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.policy import IngestPolicy
    from specdash.ingest.sources import UploadSource

    # Poisson arrivals: the running count never holds; every interval ran prefills
    prompts = [900, 850, 1200, 700, 1000, 950, 800]
    gens = [1390.0, 1500.0, 1401.0, 1530.0, 1420.0, 1480.0, 1330.0]
    running = [37, 41, 39, 45, 40, 43, 38]
    lines = [
        f"INFO 12-01 10:00:{10 * i:02d} [loggers.py:123] Engine 000: Avg prompt throughput: {p:.1f} tokens/s, "
        f"Avg generation throughput: {g:.1f} tokens/s, Running: {r} reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 12.0%, Prefix cache hit rate: 0.0%"
        for i, (p, g, r) in enumerate(zip(prompts, gens, running, strict=True))
    ]
    result = ingest(
        engine,
        UploadSource("rate.log", ("\n".join(lines) + "\n").encode()),
        IngestPolicy(link=LinkOptions(deployment="d")),
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    (bench,) = benchmarks(engine)
    assert (bench.concurrency, bench.concurrency_source) == (40, "log")  # median of 37..45
    assert bench.raw["intervals"]["varying_load"] is True
    # least prefill: at or below the lower quartile of prompt tok/s, 800 + 0.5 * (850 - 800):
    # 700 (1530 tok/s at 45 running) and 800 (1330 tok/s at 38 running)
    assert bench.output_throughput == pytest.approx((1530 + 1330) / 2)
    assert bench.decode_tps == pytest.approx((1530 / 45 + 1330 / 38) / 2)
    assert bench.raw["intervals"]["left_out"] == {"more-prefill": 5}


@pytest.mark.parametrize(
    "line,expected",
    [
        (
            "(APIServer pid=7) INFO 12-01 08:00:00 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B', "
            "'tensor_parallel_size': 2, 'quantization': 'fp8', 'speculative_config': {'method': 'eagle3', "
            "'model': '/ckpt/q/epoch_1', 'num_speculative_tokens': 3}}",
            {
                "model": "Qwen/Qwen3-8B",
                "tp_size": 2,
                "quantization": "fp8",
                "method": "eagle3",
                "draft_model": "/ckpt/q/epoch_1",
                "spec_tokens": 3,
            },
        ),
        (
            "INFO 05-02 09:00:01 [api_server.py:1043] args: Namespace(host=None, model='Qwen/Qwen3-8B', "
            "tensor_parallel_size=2, speculative_config={'method': 'eagle3', 'model': '/ckpt/q/epoch_1', "
            "'num_speculative_tokens': 3}, quantization=None)",
            {
                "model": "Qwen/Qwen3-8B",
                "tp_size": 2,
                "method": "eagle3",
                "draft_model": "/ckpt/q/epoch_1",
                "spec_tokens": 3,
            },
        ),
        (
            "INFO 11-04 16:20:01 api_server.py:529] args: Namespace(model='meta-llama/Meta-Llama-3-70B-Instruct', "
            "speculative_model='ibm-fms/llama3-70b-accelerator', num_speculative_tokens=5, tensor_parallel_size=4)",
            {
                "model": "meta-llama/Meta-Llama-3-70B-Instruct",
                "tp_size": 4,
                "draft_model": "ibm-fms/llama3-70b-accelerator",
                "spec_tokens": 5,
            },
        ),
    ],
)
def test_server_start_arguments_in_every_wording(line, expected):
    from specdash.ingest.formats.vllm_log import _namespace, _non_default_args

    assert (_non_default_args(line) if "non-default" in line else _namespace(line)) == expected


def test_speculation_switching_without_a_start_line_begins_a_new_benchmark(engine):
    """Two servers' logs pasted one after the other, the start-up lines cut off: the speculative metrics
    stop, and so does the speculative benchmark."""
    from specdash.ingest.links import LinkOptions
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.policy import IngestPolicy
    from specdash.ingest.sources import UploadSource

    def decode(second, gen, accept=None):
        spec = f"accept len: {accept:.2f}, accept rate: 0.70, " if accept else ""
        return (
            f"[2025-12-01 05:00:{second:02d} TP0] Decode batch, #running-req: 1, #token: 900, token usage: 0.00, "
            f"{spec}cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: 0, "
        )

    lines = [
        decode(1, 140.1, 2.81),
        decode(2, 139.6, 2.77),
        decode(3, 141.2, 2.85),
        decode(4, 140.4, 2.80),
        decode(5, 51.3),
        decode(6, 50.8),
        decode(7, 51.0),
    ]
    result = ingest(
        engine,
        UploadSource("pasted.log", ("\n".join(lines) + "\n").encode()),
        IngestPolicy(link=LinkOptions(deployment="d")),
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    spec, base = benchmarks(engine)
    assert (spec.speculative_algorithm, spec.interval_count) == ("unknown", 4)
    assert spec.decode_tps == pytest.approx((140.1 + 140.4) / 2)
    assert spec.accept_length == pytest.approx((2.80 + 2.81) / 2)
    assert (base.speculative_algorithm, base.accept_length, base.interval_count) == (None, None, 3)
    assert base.decode_tps == pytest.approx(51.0)
    assert base.label == "server log, no speculation from line 5, 1 running"


def test_short_client_runs_are_measured_from_their_full_intervals_only(engine):
    """Six starts of a pipeline, each a short closed-loop client run (vllm bench serve, 40-200 prompts) that
    fills a 10-s log interval once or twice. The interval in which a run began was idle until then, so its
    tokens/s are spread over time nothing ran: it is left out where a full interval measures the run, and
    kept as a lower bound where none does. Figures from the log's lines; the client's from
    pipeline_short_runs_client.jsonl."""
    load(engine, VLLM / "pipeline_short_runs.log")
    load(engine, VLLM / "pipeline_short_runs_client.jsonl")
    logs = benchmarks(engine, source_format="vllm-log")
    clients = benchmarks(engine, source_format="vllm-bench-serve")
    assert [(b.speculative_algorithm, b.concurrency) for b in logs] == [
        (None, 16),
        ("EAGLE3", 16),
        (None, 32),
        ("EAGLE3", 32),
        (None, 8),
        ("EAGLE3", 8),
    ]
    # start 1: 16 running at 311.4 (the run began inside it) and 897.8 tok/s, then 2 running (the drain)
    # and the tail: 897.8 / 16. Start 3: 227.3 (began) and 1212.8 at 32: 1212.8 / 32. Start 5: 26.4 and
    # 605.9 at 8: 605.9 / 8. (Before, the first interval was averaged in: 37.8, 22.5 and 39.5 tok/s.)
    assert [b.decode_tps for b in logs if b.speculative_algorithm is None] == pytest.approx(
        [897.8 / 16, 1212.8 / 32, 605.9 / 8]
    )
    assert [b.raw["intervals"]["left_out"] for b in logs] == [{"start": 1, "tail": 1}] * 5 + [{"tail": 1}]
    # EAGLE3 at 16: 1445.1 / 16; at 32: 1910.0 / 32 (the 2-running drain and the tail left out)
    assert [b.decode_tps for b in logs if b.speculative_algorithm] == pytest.approx(
        [1445.1 / 16, 1910.0 / 32, 483.9 / 8]
    )
    # accept length over the level's SpecDecoding lines, k = 3: 1 + accepted / (drafted / 3)
    assert logs[1].accept_length == pytest.approx(1 + (1642 + 8643 + 2025) / ((3216 + 17232 + 4137) / 3))
    # start 6 (EAGLE3 at 8) began and ended inside its first interval (483.9 tok/s at 8, then the tail): the
    # only line that measures it, kept and marked as a lower bound; its accept length from the SpecDecoding
    # lines of the level (its interval and the tail's): 1 + (2897 + 1604) / ((5736 + 3249) / 3)
    short = logs[5]
    assert short.raw["intervals"]["lower_bound"] is True
    assert (
        short.label
        == "server log, start 6 of 6 (line 60), 8 running (a lower bound: the load began inside its interval)"
    )
    assert short.accept_length == pytest.approx(1 + (2897 + 1604) / ((5736 + 3249) / 3))
    by_client = {(c.speculative_algorithm, c.concurrency): c for c in clients}
    assert short.decode_tps < by_client[("EAGLE3", 8)].decode_tps  # a lower bound indeed
    # each start measured by a full interval lands within 10 % of the client's 1000 / median TPOT
    for bench in logs[:5]:
        client = by_client[(bench.speculative_algorithm, bench.concurrency)]
        assert abs(bench.decode_tps / client.decode_tps - 1) < 0.10, (bench.label, client.decode_tps)


def test_a_load_that_never_fills_an_interval_is_a_lower_bound():
    from specdash.ingest.formats.logsummary import Interval, ServerIntervals

    server = ServerIntervals()
    server.fresh = True  # the start-up was logged: the first interval began idle
    for number, (running, gen) in enumerate([(8, 483.9), (0, 269.7), (0, 0.0)], start=1):
        server.add(Interval(number, "0", running, gen))
    (level,), left = server.levels()
    assert left == {"idle": 1} and level.lower_bound
    assert (level.output_throughput, level.concurrency) == (483.9, 8)
    # the same lines cut from the middle of a log (no start-up before them) are a measured level
    server.fresh = False
    (level,) = server.levels()[0]
    assert level.output_throughput == 483.9
