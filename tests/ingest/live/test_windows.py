"""Scrapes cut into windows and each window into a benchmark record. Every expected number is worked out
by hand from the fixture files' counters (tests/fixtures/live/README.md lists them per scrape)."""

import os
from dataclasses import replace
from datetime import timedelta

import pytest

from specdash.ingest.live.engines import read_engine
from specdash.ingest.live.exposition import ExpositionError, parse_scrape
from specdash.ingest.live.sources import fetch_scrape, window_from_files
from specdash.ingest.live.windows import (
    CONCURRENCY_SOURCE,
    IDLE,
    PREFILL_ONLY,
    Windower,
    WindowOptions,
    series_increase,
    skip_counts,
    windows_of,
)
from specdash.ingest.records import SPECULATION_UNKNOWN
from specdash.ingest.setting import parse_setting
from tests.scrape_support import EPOCH, LIVE, scenario


def readings(name: str):
    return [
        read_engine(parse_scrape(s.text, name, EPOCH + timedelta(seconds=s.seconds))) for s in scenario(name)
    ]


def windows(name: str, seconds: float, **options):
    return windows_of(readings(name), WindowOptions("pcie-box", window_seconds=seconds, **options))


@pytest.mark.parametrize(
    "before,after,increase,resets",
    [
        ({(): 10.0}, {(): 25.0}, 15.0, 0),
        ({(): 100.0}, {(): 30.0}, 30.0, 1),  # restarted: 30 counted since
        (None, {(): 7.0}, 7.0, 0),  # the series appears: it started at 0
        (
            {(("e", "0"),): 5.0, (("e", "1"),): 9.0},
            {(("e", "0"),): 8.0},
            3.0,
            0,
        ),  # a vanished series adds nothing
        ({(("e", "0"),): 5.0}, {(("e", "0"),): 8.0, (("e", "1"),): 4.0}, 7.0, 0),
    ],
)
def test_counter_increase_the_promql_way(before, after, increase, resets):
    assert series_increase(before, after) == (increase, resets)


def test_steady_vllm_window():
    (window,) = windows("vllm_steady.prom", 30)
    r = window.record
    # t=0 -> t=30: drafts 2000 -> 11600 (9600), accepted 2800 -> 15760 (12960): 1 + 12960 / 9600
    assert r.accept_length == pytest.approx(2.35)
    # per position 1500 -> 8460, 900 -> 4980, 400 -> 2320 over 9600 rounds: 6960, 4080, 1920 / 9600
    assert r.position_survival == pytest.approx([0.725, 0.425, 0.2])
    # generation 4820 -> 27412 (22592) less 32 first tokens (TTFT count 20 -> 52) over 240 s of
    # per-step latency (50 -> 290): 22560 / 240
    assert r.decode_tps == pytest.approx(94.0)
    assert r.output_throughput == pytest.approx(22592 / 30)
    assert (r.concurrency, r.concurrency_source) == (8, CONCURRENCY_SOURCE)
    assert (r.engine, r.speculative_algorithm, r.num_steps, r.topk, r.num_draft_tokens) == (
        "vllm",
        SPECULATION_UNKNOWN,
        3,
        1,
        4,
    )
    assert (r.deployment, r.interval_count, r.measured_at) == ("pcie-box", 2, EPOCH + timedelta(seconds=30))
    assert r.raw["mean_latency_ms"] == pytest.approx(25.0)  # 240 s / 9600 steps: the round, per request
    assert r.raw["setting_from"] == "engine metrics"
    assert r.raw["counter_resets"] == 0


def test_a_restarted_server_counts_from_zero_again():
    (window,) = windows("vllm_reset.prom", 30)
    r = window.record
    # t=0 holds the old server's totals (drafts 11600); t=15 the new one's since its start (3200), t=30 8000:
    # drafts 3200 + 4800 = 8000, accepted 4480 + 6240 = 10720 -> 1 + 10720 / 8000
    assert r.accept_length == pytest.approx(2.34)
    assert r.position_survival == pytest.approx([5760 / 8000, 3360 / 8000, 1600 / 8000])
    # generation 7696 + 11056 = 18752, less 16 + 16 first tokens, over 80 + 124.8 s
    assert r.decode_tps == pytest.approx(18720 / 204.8)
    assert r.output_throughput == pytest.approx(18752 / 30)
    assert r.raw["counter_resets"] == 12  # every counter series that was not 0 dropped at the restart


def test_two_dp_engines_sum_and_the_two_latency_names_count_once():
    (window,) = windows("vllm_dp.prom", 15)
    r = window.record
    # engine 0: 2400 rounds, 3600 accepted; engine 1: 2400 rounds, 2400 accepted: 1 + 6000 / 4800
    assert r.accept_length == pytest.approx(2.25)
    assert r.position_survival == pytest.approx([3300 / 4800, 1900 / 4800, 800 / 4800])
    # generation 6008 + 4808 less 8 + 8 first tokens over 60 + 48 s of per-step latency
    assert r.decode_tps == pytest.approx(100.0)
    assert r.output_throughput == pytest.approx(10816 / 15)
    assert r.concurrency == 8  # 4 + 4


def test_a_baseline_window_of_an_old_vllm():
    (window,) = windows("vllm_baseline_v010.prom", 15)
    r = window.record
    # 4816 generated less 16 first tokens over 72 s of time_per_output_token (one per step, 1 token each)
    assert r.decode_tps == pytest.approx(4800 / 72)
    assert (r.speculative_algorithm, r.accept_length, r.position_survival) == (None, None, None)
    assert r.concurrency == 16


def test_idle_and_prefill_only_windows_are_skipped_and_counted():
    outcomes = windows("vllm_idle.prom", 15)
    assert [(o.record, o.skipped) for o in outcomes] == [(None, IDLE), (None, PREFILL_ONLY)]
    assert outcomes[1].detail == "8000 prompt tokens, 0 decoded; 2 running on average"
    assert skip_counts(outcomes) == {IDLE: 1, PREFILL_ONLY: 1}


def test_the_collapse_scenario_window_by_window():
    outcomes = windows("vllm_collapse.prom", 15)
    # accepted per 4800 rounds: 6720, 240, 96, 6240
    assert [o.record.accept_length for o in outcomes] == pytest.approx([2.4, 1.05, 1.02, 2.3])
    assert outcomes[1].record.position_survival == pytest.approx([0.05, 0.0, 0.0])
    # the collapsed window: 5056 generated less 16 first tokens over 105.6 s
    assert outcomes[1].record.decode_tps == pytest.approx(5040 / 105.6)


def test_sglang_window():
    (window,) = windows("sglang_steady.prom", 30)
    r = window.record
    # the accept-length gauge at t=15 and t=30 (3.1, 2.9; the t=0 one belongs to the window before)
    assert r.accept_length == pytest.approx(3.0)
    assert r.position_survival is None
    # 14400 tokens of inter-token latency (one observation a token) over 180 s
    assert r.decode_tps == pytest.approx(80.0)
    # streamed tokens (14400) and first tokens (12) over 30 s; generation_tokens_total moves at finish
    assert r.output_throughput == pytest.approx(14412 / 30)
    assert (r.concurrency, r.num_steps, r.topk, r.num_draft_tokens) == (6, 3, None, 4)


def saved_scrapes(folder, first_mtime: int, second_mtime: int):
    """llama-server's two recorded scrapes saved as files modified at the times given."""
    saved = []
    for name, mtime in (("llamacpp_a.prom", first_mtime), ("llamacpp_b.prom", second_mtime)):
        path = folder / name
        path.write_bytes((LIVE / name).read_bytes())
        os.utime(path, (mtime, mtime))
        saved.append(path)
    return saved


def test_llama_server_once_from_two_saved_scrapes(tmp_path):
    a, b = saved_scrapes(tmp_path, 1_800_000_000, 1_800_000_030)
    outcome = window_from_files(a, b, WindowOptions("mac-studio"))
    r = outcome.record
    assert outcome.seconds == 30
    # 600 rounds, 1398 accepted: 1 + 1398 / 600; per position 540, 420, 288, 150 of 600
    assert r.accept_length == pytest.approx(1 + 1398 / 600)
    assert r.position_survival == pytest.approx([0.9, 0.7, 0.48, 0.25])
    assert r.decode_tps == pytest.approx(2000 / 40)  # tokens predicted over generation seconds
    assert r.output_throughput == pytest.approx(2000 / 30)
    assert (r.engine, r.concurrency, r.num_steps) == ("llama.cpp", 1, None)
    given = window_from_files(a, b, WindowOptions("mac-studio"), seconds=20)
    assert given.record.output_throughput == pytest.approx(2000 / 20)


def test_once_needs_the_second_scrape_later(tmp_path):
    a, b = saved_scrapes(tmp_path, 1_800_000_030, 1_800_000_000)
    with pytest.raises(ExpositionError, match="give the seconds between the two scrapes"):
        window_from_files(a, b, WindowOptions("mac-studio"))


def test_the_setting_flag_wins_and_the_engine_fills_its_blanks():
    (window,) = windows("vllm_steady.prom", 30, setting=parse_setting("EAGLE3"))
    r = window.record
    assert (r.speculative_algorithm, r.num_steps, r.topk, r.num_draft_tokens) == ("EAGLE3", 3, 1, 4)
    assert r.raw["setting_from"] == "--setting"
    (sglang,) = windows("sglang_steady.prom", 30, setting=parse_setting("EAGLE3 3/2/6"))
    assert (sglang.record.num_steps, sglang.record.topk, sglang.record.num_draft_tokens) == (3, 2, 6)


def test_a_setting_that_cannot_hold_the_measured_accept_length_is_a_problem_not_a_record():
    # EAGLE3 1/1/2 emits at most 2 tokens a round; the window measured 2.35
    (window,) = windows("vllm_steady.prom", 30, setting=parse_setting("EAGLE3 1/1/2"))
    assert window.record is None and window.skipped is None
    assert "accept_length: 2.35 is more than a round of 1/1/2 can emit" in str(window.problems[0])


def test_the_windower_closes_a_window_at_each_window_length_and_restarts_on_another_engine():
    windower = Windower(WindowOptions("pcie-box", window_seconds=30))
    vllm = readings("vllm_steady.prom")
    assert windower.add(vllm[0]) is None and windower.add(vllm[1]) is None
    closed = windower.add(vllm[2])
    assert closed.record is not None and closed.scrapes == 3
    sglang = readings("sglang_steady.prom")[0]
    later = replace(sglang, at=EPOCH + timedelta(seconds=45))
    assert windower.add(later) is None and windower.readings == [later]


def test_windows_from_the_fixture_server_as_it_switches_scenario(metrics_server, recorded_clock):
    windower = Windower(WindowOptions("pcie-box", window_seconds=15))
    outcomes = [
        windower.add(read_engine(fetch_scrape(metrics_server.url, now=recorded_clock))) for _ in range(3)
    ]
    metrics_server.switch("vllm_idle.prom")  # the load stops: the idle scenario starts at t=30's counters
    outcomes += [
        windower.add(read_engine(fetch_scrape(metrics_server.url, now=recorded_clock))) for _ in range(3)
    ]
    assert outcomes[0] is None
    closed = [o for o in outcomes if o is not None]
    assert [o.end - EPOCH for o in closed] == [timedelta(seconds=s) for s in (15, 30, 45, 60, 75)]
    # steady: 1 + 6720 / 4800 then 1 + 6240 / 4800; then t=30 -> 45 and 45 -> 60 idle, 60 -> 75 prefill
    assert [o.record.accept_length for o in closed[:2]] == pytest.approx([2.4, 2.3])
    assert [o.skipped for o in closed[2:]] == [IDLE, IDLE, PREFILL_ONLY]


@pytest.mark.parametrize(
    "name,seconds,expected",
    [
        # the per-request histograms: prompt 98112 -> 115520, generation 27900 -> 32612, count 90 -> 106
        ("vllm_request_lengths.prom", 15, (1088.0, 294.5)),
        # SGLang at finish: prompt 30000 -> 42000, generation 3800 -> 14800, num_requests 30 -> 41
        ("sglang_steady.prom", 30, (12000 / 11, 1000.0)),
        # vLLM without the histograms: its prompt and generation counters move each step, not at finish
        ("vllm_steady.prom", 30, (None, None)),
        ("vllm_baseline_v010.prom", 15, (None, None)),
    ],
)
def test_a_window_states_the_mean_lengths_of_the_requests_finished_in_it(name, seconds, expected):
    (window,) = windows(name, seconds)
    assert (window.record.input_tokens, window.record.output_tokens) == pytest.approx(expected)
    assert (window.record.raw["context_from"] is None) == (expected == (None, None))


def test_llama_server_counts_no_finished_requests_so_no_lengths(tmp_path):
    first, second = saved_scrapes(tmp_path, 1_800_000_000, 1_800_000_030)
    outcome = window_from_files(first, second, WindowOptions("box"))
    assert (outcome.record.input_tokens, outcome.record.output_tokens) == (None, None)
