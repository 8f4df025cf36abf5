"""Scraping an endpoint that misbehaves on one GET (tests/scrape_support.py's tricks, on 127.0.0.1): every
misbehaviour costs one scrape, counted with its reason, within the scrape's deadline; an answer cut short
or inconsistent with the scrape before makes its window "inconsistent scrape", never a benchmark; a set
stop event ends a scrape in flight; a busy store keeps the window for the next try."""

import sqlite3
import threading
import time

import pytest
from sqlalchemy import select

from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark
from specdash.ingest.live.http import ScrapeFailed, Stopped
from specdash.ingest.live.scrape import Scraper
from specdash.ingest.live.sources import fetch_scrape
from specdash.ingest.live.windows import INCONSISTENT, WindowOptions
from tests.scrape_support import (
    MetricsServer,
    RecordedClock,
    close_delimited,
    cut_at_line,
    drop_samples,
    edited,
    endless_headers,
    malformed_status_line,
    redirect,
    set_sample,
    too_many_headers,
    trickled_body,
    truncated_chunked,
)

pytestmark = pytest.mark.slow

DEADLINE_SECONDS = 1.0
# What a loaded shared machine may add to a deadline before the scrape gives up.
ALLOWANCE_SECONDS = 1.0
ITL_SUM = "vllm:inter_token_latency_seconds_sum"


def stored(engine) -> list[Benchmark]:
    with reading(engine) as session:
        return list(session.scalars(select(Benchmark)))


def scrape_three(engine, server, deadline=DEADLINE_SECONDS):
    """vllm_steady.prom's three scrapes (t=0, 15, 30) through the scraper's own loop, windows of 15 s;
    returns the scraper, what was lost, and how long each GET took."""
    scraper = Scraper(engine, WindowOptions("pcie-box", window_seconds=15))
    clock, stop, lost, took = RecordedClock(server), threading.Event(), [], []

    def fetch():
        if len(took) == 2:
            stop.set()  # the third GET is the last
        began = time.monotonic()
        try:
            return fetch_scrape(server.url, deadline, now=clock, stop=stop if len(took) < 2 else None)
        finally:
            took.append(time.monotonic() - began)

    scraper.run(fetch, 0.01, stop, on_window=lambda w: None, on_lost=lost.append)
    return scraper, lost, took


@pytest.mark.parametrize(
    "trick,kind,message",
    [
        (trickled_body, "no answer", "no complete answer within 1 s (waiting for the body)"),
        (endless_headers, "no answer", "no complete answer within 1 s (waiting for the headers)"),
        (malformed_status_line, "broken answer", "malformed status line: 'HTTP/1.1 2OO OK'"),
        (too_many_headers, "broken answer", "more than 100 headers"),
    ],
)
def test_a_broken_answer_costs_one_scrape_within_the_deadline(engine, trick, kind, message):
    with MetricsServer("vllm_steady.prom") as server:
        server.misbehave(1, trick)
        scraper, lost, took = scrape_three(engine, server)
    assert scraper.summary.lost == {kind: 1} and scraper.summary.scrapes == 2
    assert lost == [f"{server.url}: {message}"]
    assert took[1] < DEADLINE_SECONDS + ALLOWANCE_SECONDS
    # scraping went on: the window from t=0 to t=30 is whole (counters are cumulative)
    (bench,) = stored(engine)
    assert bench.raw["window"]["seconds"] == 30


@pytest.mark.parametrize(
    "trick,message",
    [
        (cut_at_line(0.6), "the body ended after"),
        (truncated_chunked, "the chunked body ended in the middle of a chunk"),
    ],
)
def test_an_answer_cut_short_makes_its_window_inconsistent(engine, trick, message):
    with MetricsServer("vllm_steady.prom") as server:
        server.misbehave(1, trick)
        scraper, lost, _ = scrape_three(engine, server)
    assert scraper.summary.lost == {"cut short": 1}
    assert message in lost[0]
    assert scraper.summary.skipped == {INCONSISTENT: 1} and scraper.summary.stored == 0
    assert stored(engine) == []


@pytest.mark.parametrize(
    "edit,detail",
    [
        (
            drop_samples("vllm:spec_decode"),
            "vllm:spec_decode_num_drafts_total{engine=0,model_name=Qwen/Qwen3-8B} was in the scrape before",
        ),
        (set_sample(ITL_SUM, "10.0"), f"{ITL_SUM[:-4]} sum went back (50 -> 10) while its count went on"),
        (
            set_sample("vllm:spec_decode_num_drafts_total", "-3000"),
            "vllm:spec_decode_num_drafts_total is -3000 at 09:00:15",
        ),
    ],
    ids=["speculative series missing", "latency sum back, count on", "negative counter"],
)
def test_an_inconsistent_scrape_stores_no_window(engine, edit, detail):
    """The scrape at t=15 is edited: the window ending with it, and the one it would start, store
    nothing (a scrape that lost a series would make the next window count the series from zero)."""
    with MetricsServer("vllm_steady.prom") as server:
        server.misbehave(1, edited(edit))
        scraper, lost, _ = scrape_three(engine, server)
    assert lost == [] and scraper.summary.scrapes == 3
    assert scraper.summary.skipped == {INCONSISTENT: 1} and scraper.summary.stored == 0
    assert stored(engine) == []


def test_the_window_detail_says_what_was_inconsistent(engine):
    from specdash.ingest.live.engines import read_engine
    from specdash.ingest.live.windows import Windower

    with MetricsServer("vllm_steady.prom") as server:
        server.misbehave(1, edited(set_sample("vllm:spec_decode_num_drafts_total", "-3000")))
        clock, windower = RecordedClock(server), Windower(WindowOptions("pcie-box", window_seconds=15))
        outcomes = [windower.add(read_engine(fetch_scrape(server.url, 5.0, now=clock))) for _ in range(3)]
    assert outcomes[0] is None and outcomes[2] is None  # the t=30 scrape starts the next window
    assert outcomes[1].skipped == INCONSISTENT
    assert (
        outcomes[1].detail
        == "vllm:spec_decode_num_drafts_total is -3000 at 09:00:15: a counter is never negative"
    )


@pytest.mark.parametrize("where", ["other server", "ftp"])
def test_a_redirect_is_not_followed(engine, where):
    with MetricsServer("vllm_steady.prom") as server, MetricsServer("vllm_collapse.prom") as other:
        target = other.url if where == "other server" else "ftp://127.0.0.1:1/metrics"
        server.misbehave(1, redirect(target))
        scraper, lost, _ = scrape_three(engine, server)
    assert other.served == []
    assert lost == [f"{server.url}: HTTP 302 redirect to {target}: not followed"]
    assert scraper.summary.lost == {"redirected": 1}
    (bench,) = stored(engine)  # t=0 to t=30, both from the first server
    assert bench.raw["window"]["seconds"] == 30


@pytest.mark.parametrize("trick", [trickled_body, endless_headers], ids=["trickled body", "endless headers"])
def test_a_stop_ends_a_scrape_in_flight_at_once(trick):
    stop, set_at = threading.Event(), []
    with MetricsServer("vllm_steady.prom") as server:
        server.misbehave(0, trick)

        def stop_soon() -> None:
            server.tricked.wait(10)
            time.sleep(0.3)
            set_at.append(time.monotonic())
            stop.set()

        threading.Thread(target=stop_soon, daemon=True).start()
        with pytest.raises(Stopped):
            fetch_scrape(server.url, 30.0, stop=stop)
        stopped_after = time.monotonic()
    # the fetch looks at the stop event every 0.1 s
    assert stopped_after - set_at[0] < 1.0


def test_a_busy_store_keeps_the_window_for_the_next_scrape(db_url):
    """Another writer holds the write lock while the t=15 window closes: the window waits (no error ends
    the loop), and is stored at the next scrape once the lock is free."""
    store = make_engine(db_url, lock_timeout=0.2)
    path = db_url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    with MetricsServer("vllm_steady.prom") as server:
        scraper = Scraper(store, WindowOptions("pcie-box", window_seconds=15))
        clock, stop, lost = RecordedClock(server), threading.Event(), []
        gets = []

        def fetch():
            gets.append(len(gets))
            if len(gets) == 2:
                holder.execute("BEGIN IMMEDIATE")  # held while the first window closes
            if len(gets) == 3:
                holder.execute("COMMIT")
                stop.set()
            return fetch_scrape(server.url, 5.0, now=clock)

        scraper.run(fetch, 0.01, stop, on_window=lambda w: None, on_lost=lost.append)
    holder.close()
    assert len(lost) == 1 and "kept for the next try" in lost[0] and "write lock" in lost[0]
    # both windows (t=0-15, kept a scrape; t=15-30) are stored, in order
    assert scraper.summary.stored == 2 and not scraper.summary.skipped
    assert sorted(b.raw["window"]["end"][11:19] for b in stored(store)) == ["09:00:15", "09:00:30"]


def test_a_password_in_the_endpoint_url_is_in_no_message_or_record():
    with MetricsServer("vllm_steady.prom") as server:
        url = server.url.replace("http://", "http://ana:hunter2@")
        scrape = fetch_scrape(url, 5.0)
        server.misbehave(1, malformed_status_line)
        with pytest.raises(ScrapeFailed) as failed:
            fetch_scrape(url, 5.0)
    assert scrape.source == server.url.replace("http://", "http://ana:***@")
    assert str(failed.value).startswith("http://ana:***@127.0.0.1:") and "hunter2" not in str(failed.value)


def test_a_body_over_the_cap_is_refused_and_one_without_a_length_is_read_to_the_close():
    with MetricsServer("vllm_steady.prom") as server:
        size = len(server.scrapes[0].text.encode())
        with pytest.raises(
            ScrapeFailed, match=f"a body of {size} bytes, more than the 1000 a scrape may have"
        ):
            fetch_scrape(server.url, 5.0, max_bytes=1000)
        server.misbehave(1, close_delimited)
        assert fetch_scrape(server.url, 5.0).has("vllm:spec_decode_num_drafts_total")
        server.misbehave(2, close_delimited)
        with pytest.raises(ScrapeFailed, match="a body of more than the 1000 bytes a scrape may have"):
            fetch_scrape(server.url, 5.0, max_bytes=1000)


def test_https_is_scraped_under_the_same_deadline_and_a_certificate_is_checked(monkeypatch):
    import ssl

    from tests.scrape_support import TLS

    with MetricsServer("vllm_steady.prom", tls=True) as server:
        with pytest.raises(ScrapeFailed, match="TLS: .*certificate verify failed"):
            fetch_scrape(server.url, 5.0)  # self-signed: not trusted by default
        trusted = ssl.create_default_context(cafile=str(TLS / "cert.pem"))
        monkeypatch.setattr(ssl, "create_default_context", lambda: trusted)
        assert fetch_scrape(server.url, 5.0).has("vllm:spec_decode_num_drafts_total")
        server.misbehave(len(server.served), trickled_body)
        began = time.monotonic()
        with pytest.raises(ScrapeFailed, match="no complete answer within 1 s"):
            fetch_scrape(server.url, 1.0)
        assert time.monotonic() - began < DEADLINE_SECONDS + ALLOWANCE_SECONDS


def test_an_ipv6_endpoint_is_scraped():
    import socket
    from http.server import ThreadingHTTPServer

    class V6(ThreadingHTTPServer):
        address_family = socket.AF_INET6

    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with MetricsServer("vllm_steady.prom") as server:
        handler = server.server.RequestHandlerClass
        v6 = V6(("::1", 0), handler)
        thread = threading.Thread(target=v6.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            scrape = fetch_scrape(f"http://[::1]:{v6.server_address[1]}/metrics", 5.0)
        finally:
            v6.shutdown()
            v6.server_close()
    assert scrape.has("vllm:spec_decode_num_drafts_total")


def test_a_window_the_store_stays_too_busy_for_is_counted_and_the_scraper_goes_on(db_url):
    """Past its wait ($SPECDASH_LOCK_TIMEOUT; none here) a busy store costs the window, counted."""
    store = make_engine(db_url, lock_timeout=0.1)
    holder = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with MetricsServer("vllm_steady.prom") as server:
            scraper = Scraper(store, WindowOptions("pcie-box", window_seconds=15), busy_seconds=0)
            clock = RecordedClock(server)
            windows = [scraper.add_all(fetch_scrape(server.url, 5.0, now=clock)) for _ in range(3)]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert [len(w) for w in windows] == [0, 1, 1]
    assert scraper.summary.skipped == {"store busy": 2} and stored(store) == []
    assert "write lock" in windows[1][0].outcome.detail
