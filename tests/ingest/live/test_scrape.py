"""Scraping a local endpoint that serves recorded scrapes: each window stored as a `live` benchmark through
the one load path, skipped windows counted, an acceptance collapse raised once and its recovery written
into the alert's history. Expected numbers are worked out by hand from tests/fixtures/live/README.md."""

import pytest
from sqlalchemy import select

from specdash.costmodel.collapse import COLLAPSE_CODE
from specdash.db.engine import reading
from specdash.db.live_models import Notification
from specdash.db.models import Alert, AlertEvent, Benchmark
from specdash.ingest.live.scrape import Scraper
from specdash.ingest.live.sources import fetch_scrape
from specdash.ingest.live.windows import IDLE, PREFILL_ONLY, WindowOptions
from specdash.notify import queue_notifications
from tests.scrape_support import EPOCH, MetricsServer, RecordedClock

HOOK = "http://127.0.0.1:9/hook"  # only queued, never posted here


def scrape_all(engine, server, clock, window_seconds=15.0, in_window=None, **options):
    scraper = Scraper(
        engine,
        WindowOptions("pcie-box", window_seconds=window_seconds, **options),
        in_window,
    )
    windows = []
    for _ in server.scrapes:  # bounded: one GET per recorded scrape
        window = scraper.add(fetch_scrape(server.url, now=clock))
        if window is not None:
            windows.append(window)
    return scraper, windows


def stored(engine):
    with reading(engine) as session:
        return list(session.scalars(select(Benchmark).order_by(Benchmark.id)))


@pytest.mark.parametrize("metrics_server", ["vllm_steady.prom"], indirect=True)
def test_steady_load_gives_one_live_benchmark_per_window(engine, metrics_server, recorded_clock):
    scraper, windows = scrape_all(engine, metrics_server, recorded_clock, run="r7", checkpoint="epoch_2")
    first, second = stored(engine)
    # t=0 -> 15: drafts +4800, accepted +6720 -> 1 + 6720/4800; per position +3600, +2160, +960
    assert first.accept_length == pytest.approx(2.4)
    assert first.position_survival == pytest.approx([0.75, 0.45, 0.2])
    # decoded = generation +11536 less first tokens +16, over the ITL sum +115.2 s
    assert first.decode_tps == pytest.approx(11520 / 115.2)
    assert first.output_throughput == pytest.approx(11536 / 15)
    assert (first.source_format, first.engine, first.concurrency) == ("live", "vllm", 8)
    assert first.measured_at.replace(tzinfo=None) == (EPOCH.replace(tzinfo=None)).replace(second=15)
    # t=15 -> 30: accepted +6240 over 4800 drafts; decoded 11056 - 16 over 124.8 s
    assert second.accept_length == pytest.approx(2.3)
    assert second.decode_tps == pytest.approx(11040 / 124.8)
    assert scraper.summary.stored == 2 and not scraper.summary.skipped
    assert [w.acceptance.check.change for w in windows] == ["steady", "steady"]


@pytest.mark.parametrize("metrics_server", ["vllm_idle.prom"], indirect=True)
def test_idle_windows_are_counted_never_stored(engine, metrics_server, recorded_clock):
    scraper, windows = scrape_all(engine, metrics_server, recorded_clock)
    assert [w.outcome.skipped for w in windows] == [IDLE, PREFILL_ONLY]
    assert stored(engine) == []
    assert scraper.summary.skipped == {IDLE: 1, PREFILL_ONLY: 1}
    assert "1 skipped: idle; 1 skipped: prefill only" in scraper.summary.text()


@pytest.mark.parametrize("metrics_server", ["vllm_reset.prom"], indirect=True)
def test_a_restarted_server_counts_from_zero(engine, metrics_server, recorded_clock):
    _, windows = scrape_all(engine, metrics_server, recorded_clock)
    first, second = stored(engine)
    # every counter fell at t=15: what it holds there (3200 drafts, 4480 accepted) is the increase
    assert first.accept_length == pytest.approx(1 + 4480 / 3200)
    assert first.raw["counter_resets"] > 0
    assert second.accept_length == pytest.approx(1 + (10720 - 4480) / (8000 - 3200))


@pytest.mark.parametrize("metrics_server", ["vllm_dp.prom"], indirect=True)
def test_two_data_parallel_engines_are_summed(engine, metrics_server, recorded_clock):
    scrape_all(engine, metrics_server, recorded_clock)
    (bench,) = stored(engine)
    # engine 0: drafts +2400, accepted +3600; engine 1: +2400, +2400
    assert bench.accept_length == pytest.approx(1 + 6000 / 4800)
    assert bench.position_survival == pytest.approx([3300 / 4800, 1900 / 4800, 800 / 4800])
    # generation +6008 +4808 less first tokens +8 +8, over ITL sums +60 +48 s; running 4 + 4
    assert bench.decode_tps == pytest.approx(10800 / 108)
    assert bench.concurrency == 8


@pytest.mark.parametrize("metrics_server", ["vllm_collapse.prom"], indirect=True)
def test_collapse_is_one_critical_alert_queued_once_and_its_recovery_in_history(
    engine, metrics_server, recorded_clock
):
    def in_window(session, quiet):
        queue_notifications(session, HOOK, quiet)

    scraper, windows = scrape_all(
        engine, metrics_server, recorded_clock, run="r7", checkpoint="epoch_2", in_window=in_window
    )
    # accept lengths: 1 + 6720/4800, 1 + 240/4800, 1 + 96/4800, 1 + 6240/4800
    assert [round(w.outcome.record.accept_length, 3) for w in windows] == [2.4, 1.05, 1.02, 2.3]
    assert [w.acceptance.check.change for w in windows] == [
        "steady",
        "collapsed",
        "still collapsed",
        "recovered",
    ]
    collapsed = windows[1].benchmark_id
    assert [w.acceptance.alert_id for w in windows] == [None, collapsed, collapsed, collapsed]
    # the history reference is the one healthy window before: 2.4, so the line is max(1.2, 2.4 / 2)
    assert windows[1].acceptance.reference == pytest.approx(2.4)
    assert windows[1].acceptance.reference_source == "history"
    with reading(engine) as session:
        alert = session.get(Alert, collapsed)
        assert (alert.is_alert, alert.severity, alert.code) == (True, "critical", COLLAPSE_CODE)
        assert alert.reason.startswith("Acceptance collapsed: accept length 1.05 is near 1.0")
        assert alert.status == "resolved"
        (event,) = session.scalars(select(AlertEvent).where(AlertEvent.benchmark_id == collapsed))
        assert (event.who, event.from_status, event.to_status) == ("specdash scrape", "open", "resolved")
        assert event.note.startswith("Acceptance recovered: accept length 2.30")
        other_alerts = session.scalars(select(Alert).where(Alert.benchmark_id != collapsed)).all()
        # the other windows get the ordinary verdict (predicted on a baseline estimated from the windows):
        # none of them is a second collapse alert
        assert not any(a.code == COLLAPSE_CODE for a in other_alerts)
        notes = session.execute(select(Notification.ref_id, Notification.status)).all()
    # the collapse is posted once; the window still collapsed after it is not posted again (the others
    # may post their ordinary verdicts)
    assert [n for n in notes if n[0] == collapsed] == [(collapsed, "pending")]
    assert (windows[2].benchmark_id, "skipped") in notes
    assert (scraper.summary.collapses, scraper.summary.recoveries) == (1, 1)


@pytest.mark.parametrize("metrics_server", ["vllm_collapse.prom"], indirect=True)
def test_a_refresh_keeps_the_collapse_alert(engine, metrics_server, recorded_clock):
    from specdash.answers.refresh import refresh
    from specdash.db.engine import transaction

    _, windows = scrape_all(engine, metrics_server, recorded_clock, run="r7", checkpoint="epoch_2")
    with transaction(engine) as session:
        refresh(session)
    with reading(engine) as session:
        alert = session.get(Alert, windows[1].benchmark_id)
        assert (alert.is_alert, alert.severity, alert.code) == (True, "critical", COLLAPSE_CODE)


def test_a_malformed_scrape_is_lost_whole_and_nothing_stored(engine):
    from specdash.ingest.live.exposition import ExpositionError

    with MetricsServer("vllm_malformed.prom") as server:
        scraper = Scraper(engine, WindowOptions("pcie-box", window_seconds=15))
        with pytest.raises(
            ExpositionError,
            match=r"/metrics:131: vllm:spec_decode_num_accepted_tokens_total: not Prometheus text",
        ):
            scraper.add(fetch_scrape(server.url, now=RecordedClock(server)))
    assert stored(engine) == [] and scraper.summary.scrapes == 0


@pytest.mark.parametrize("metrics_server", ["sglang_steady.prom"], indirect=True)
def test_sglang_windows_take_the_gauge_and_have_no_survival(engine, metrics_server, recorded_clock):
    scrape_all(engine, metrics_server, recorded_clock)
    first, second = stored(engine)
    # the accept-length gauge at the window's end scrape: 3.1, then 2.9 (TP ranks 0 and 1 repeat it)
    assert (first.accept_length, second.accept_length) == (pytest.approx(3.1), pytest.approx(2.9))
    # one inter-token latency observation per token: count +7200 over sum +90 s
    assert first.decode_tps == pytest.approx(7200 / 90)
    assert first.position_survival is None
    assert (first.engine, first.concurrency, first.num_steps, first.num_draft_tokens) == ("sglang", 6, 3, 4)


def test_scrapes_an_endpoint_refuses_are_lost_and_counted(engine):
    import threading

    stop = threading.Event()
    lost: list[str] = []
    with MetricsServer("vllm_steady.prom", status=503) as server:
        scraper = Scraper(engine, WindowOptions("pcie-box", window_seconds=15))

        def fetch():
            if len(server.served) >= 2:  # the third fetch is the last
                stop.set()
            return fetch_scrape(server.url)

        scraper.run(fetch, 0.01, stop, on_window=lambda w: None, on_lost=lost.append)
    assert scraper.summary.lost == {"no answer": 3} and scraper.summary.scrapes == 0
    assert lost[0].endswith("/metrics: HTTP 503 Service Unavailable")
    assert stored(engine) == []


@pytest.mark.parametrize("metrics_server", ["vllm_request_tpot_only.prom"], indirect=True)
def test_a_vllm_without_inter_token_histograms_is_timed_by_its_per_request_tpot(
    engine, metrics_server, recorded_clock
):
    """Neither vllm:inter_token_latency_seconds nor vllm:time_per_output_token_seconds is exposed: the
    per-request histogram vllm:request_time_per_output_token_seconds times decode. t=0 -> 15: 16 requests
    finished, their TPOT summing 1.5752 - 1.332 = 0.2432 s (15.2 ms each): 1 / 0.0152 tok/s per request."""
    scraper, _ = scrape_all(engine, metrics_server, recorded_clock)
    (window,) = stored(engine)
    assert window.decode_tps == pytest.approx(1 / 0.0152)
    assert window.output_throughput == pytest.approx((34916 - 30100) / 15)
    assert window.raw["latency_metric"] == "vllm:request_time_per_output_token_seconds"
    assert window.raw["latency_per"] == "request"
    # decoded tokens: generation +4816 less 16 first tokens, over 4800 x 15.2 ms of request-seconds
    assert window.raw["decode"]["tokens"] == 4800 and window.raw["decode"]["seconds"] == pytest.approx(72.96)
    assert scraper.summary.stored == 1
