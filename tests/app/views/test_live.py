"""The Live page: a scraped drafter's windows over time against the prediction, collapse marked, and the
page following the store while windows arrive."""

import pandas as pd
import pytest

from specdash.app.frames import frame as as_frame
from specdash.app.live_charts import accept_length_figure, survival_figure, survival_frame, tps_figure
from specdash.app.text import unmd
from specdash.db import live_windows
from specdash.db.engine import make_engine, reading
from specdash.ingest.live.scrape import Scraper
from specdash.ingest.live.sources import fetch_scrape
from specdash.ingest.live.windows import WindowOptions
from tests.app_support import run_page
from tests.scrape_support import MetricsServer, RecordedClock

PAGE = "views/live.py"


def scrape(url, name, scrapes=None):
    engine = make_engine(url)
    with MetricsServer(name) as server:
        clock = RecordedClock(server)
        scraper = Scraper(engine, WindowOptions("pcie-box", "r7", "epoch_2", window_seconds=15))
        for _ in range(scrapes or len(server.scrapes)):
            scraper.add(fetch_scrape(server.url, now=clock))
    return engine


def test_charts_of_a_collapse_and_its_recovery(db_url):
    engine = scrape(db_url, "vllm_collapse.prom")
    with reading(engine) as session:
        (target,) = live_windows.live_targets(session)
        frame = as_frame(
            live_windows.live_series(session, target.deployment_id, target.checkpoint_id),
            live_windows.LiveWindow,
        )
    assert (target.run, target.checkpoint, target.windows) == ("r7", "epoch_2", 4)
    # hand-worked accept lengths of the scenario's four windows (tests/ingest/live/test_scrape.py)
    assert frame["accept_length"].round(3).tolist() == [2.4, 1.05, 1.02, 2.3]
    assert frame["acceptance"].tolist() == ["steady", "collapsed", "still collapsed", "recovered"]
    figure = accept_length_figure(frame)
    marked = next(t for t in figure.data if t.name == "acceptance collapsed")
    assert list(marked.y) == pytest.approx([1.05, 1.02])
    # no deployment profile: the prediction rests on a baseline estimated from the windows themselves
    assert [t.name for t in figure.data] == [
        "measured accept length",
        "predicted accept length",
        "acceptance collapsed",
    ]
    survival = survival_frame(frame)
    assert list(survival.columns) == ["s1", "s2", "s3"]
    assert survival.iloc[0].tolist() == pytest.approx([0.75, 0.45, 0.2])  # +3600, +2160, +960 of 4800
    assert [t.name for t in tps_figure(frame).data] == [
        "measured tok/s per request",
        "predicted tok/s per request",
        "aggregate tok/s (right axis)",
    ]


def test_live_page_without_windows_says_how_to_start(monkeypatch, db_url):
    at = run_page(monkeypatch, db_url, PAGE)
    assert not at.exception
    assert "specdash scrape http://HOST:PORT/metrics" in at.info[0].value


def test_live_page_shows_the_latest_window_and_follows_new_ones(monkeypatch, db_url):
    scrape(db_url, "vllm_collapse.prom", scrapes=3)  # two windows: steady, then the collapse
    at = run_page(monkeypatch, db_url, PAGE)
    assert not at.exception
    assert [m.value for m in at.metric] == ["1.05", "47.7", "8", "2"]
    assert "Acceptance has collapsed" in at.error[0].value
    assert any("Scraping: the latest window was stored" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 3
    # another process scrapes the steady scenario: its first window is the one already stored (the same
    # scrapes at the same times), its second is new
    scrape(db_url, "vllm_steady.prom")
    at.run()
    assert at.metric[3].value == "3"
    assert at.metric[0].value == "2.30"  # t=15 -> 30 of vllm_steady: 1 + 6240 / 4800


def test_a_collapse_alert_without_a_prediction_shows_on_overview_and_alerts(monkeypatch, db_url):
    """A drafter on a deployment without a profile: its collapse alert shows on the Overview and Alerts."""
    scrape(db_url, "vllm_collapse.prom", scrapes=3)
    at = run_page(monkeypatch, db_url)
    assert not at.exception
    assert any("Acceptance collapsed: accept length 1.05" in unmd(box.value) for box in at.error)
    at.switch_page("views/alerts.py")
    at.run()
    assert not at.exception
    # the window is predicted against a baseline estimated from the speculative windows
    assert at.metric[0].value == "47.7 tok/s"


def test_a_day_of_windows_is_drawn_in_lines_and_the_legend_clears_the_right_axis(db_url):
    engine = scrape(db_url, "vllm_collapse.prom")
    with reading(engine) as session:
        (target,) = live_windows.live_targets(session)
        frame = as_frame(
            live_windows.live_series(session, target.deployment_id, target.checkpoint_id),
            live_windows.LiveWindow,
        )
    # four windows keep a marker each; 201 (the four repeated) are past MARKERS_UP_TO = 200
    assert {t.mode for t in accept_length_figure(frame).data if t.name.startswith("measured")} == {
        "lines+markers"
    }
    many = pd.concat([frame] * 51, ignore_index=True).iloc[:201]
    assert [t.mode for t in accept_length_figure(many).data][:2] == ["lines", "lines"]
    assert {t.mode for t in survival_figure(many).data} == {"lines"}
    # the aggregate tok/s has its own axis on the right: the legend goes beyond its tick labels
    assert tps_figure(many).layout.legend.x == 1.1
    assert accept_length_figure(many).layout.legend.x == 1.02
