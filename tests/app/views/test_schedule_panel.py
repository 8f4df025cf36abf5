"""A GuideLLM depth sweep dropped on the Upload page (tests/fixtures/guidellm/depth_sweep/) goes through
ingest/pipeline.py like any file, and the What-if page then shows its depth x load heat map with the schedule
drawn on it, marked estimated (the sweep has no run without speculation)."""

import math

import pytest
from sqlalchemy import func, select

from specdash.app.schedule_charts import grid_frame, schedule_heatmap
from specdash.app.text import unmd
from specdash.costmodel.schedule import ScheduleEntry
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, IngestedFile
from tests.app_support import run_page, table_with
from tests.conftest import FIXTURES

SWEEP = FIXTURES / "guidellm" / "depth_sweep"
FILES = ("drafter.json", "eagle3_k1.json", "eagle3_k3.json", "eagle3_k5.json")


def test_the_heat_map_shares_and_the_schedule_trace():
    grid = [
        (1.0, 0, 100.0),
        (1.0, 1, 150.0),
        (1.0, 2, 200.0),
        (8.0, 0, 90.0),
        (8.0, 1, 120.0),
        (8.0, 2, 100.0),
    ]
    shares = grid_frame(grid).set_index(["concurrency", "K"])["share"]
    # each load's cells against its own best: 200 at B = 1, 120 at B = 8
    assert shares[(1.0, 1)] == pytest.approx(0.75) and shares[(8.0, 2)] == pytest.approx(100 / 120)
    entries = [
        ScheduleEntry(1.0, 2, 2.0, 200.0, 200.0, 2.0, True),
        ScheduleEntry(8.0, 1, 1.5, 120.0, 960.0, 1.33, True),
    ]
    figure = schedule_heatmap(grid, entries, "<b>x</b>")
    heat, schedule = figure.data
    assert list(figure.layout.xaxis.ticktext) == ["1", "8"] and list(heat.y) == [0, 1, 2]
    assert list(heat.x) == [1.0, 8.0] == list(figure.layout.xaxis.tickvals)  # within a decade: linear
    assert heat.z[2][0] == pytest.approx(1.0) and heat.z[1][1] == pytest.approx(1.0)
    assert list(schedule.x) == [1.0, 8.0] and list(schedule.y) == [2, 1]
    assert figure.layout.title.text == "&lt;b&gt;x&lt;/b&gt;"


def test_loads_spanning_decades_are_drawn_on_a_log_axis_and_no_depth_below_zero():
    loads = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    grid = [(load, k, 100.0 + k * (10 - load / 16)) for load in loads for k in range(0, 8)]
    entries = [ScheduleEntry(load, 3, 2.0, 120.0, 120.0 * load, 1.2, True) for load in loads]
    figure = schedule_heatmap(grid, entries, "x")
    heat, schedule = figure.data
    # evenly spaced doublings: batches 1-16 no longer pile up at the left edge
    steps = [b - a for a, b in zip(heat.x, heat.x[1:], strict=False)]
    assert steps == pytest.approx([math.log10(2)] * 7)
    assert list(figure.layout.xaxis.ticktext) == ["1", "2", "4", "8", "16", "32", "64", "128"]
    assert "log scale" in figure.layout.xaxis.title.text
    assert list(schedule.x) == pytest.approx(list(heat.x))
    # the cells' own extent on the depth axis: ticks from 0 (no speculation) up, never -1
    assert tuple(figure.layout.yaxis.range) == (-0.5, 7.5) and figure.layout.yaxis.tick0 == 0
    # a long title goes on two lines, each escaped (on one it ran past the chart's edge)
    assert schedule_heatmap(grid, entries, "<i>run</i>/published\non box").layout.title.text == (
        "&lt;i&gt;run&lt;/i&gt;/published<br>on box"
    )


def test_a_guidellm_sweep_uploaded_is_scheduled_on_the_whatif_page(monkeypatch, db_url):
    at = run_page(monkeypatch, db_url, "views/upload.py")
    files = [(name, (SWEEP / name).read_bytes(), "application/octet-stream") for name in FILES]
    at.file_uploader[0].set_value(files).run()
    assert not at.exception
    at.button(key="upload_save").click().run()
    assert not at.exception
    engine = make_engine(db_url)
    with reading(engine) as session:
        assert session.scalar(select(func.count()).select_from(Benchmark)) == 9
        # stored by ingest/pipeline.py, which records each file with its format
        formats = sorted(session.scalars(select(IngestedFile.format)))
    assert formats == ["guidellm", "guidellm", "guidellm", "specdash"]
    at.switch_page("views/whatif.py").run()
    assert not at.exception
    table = table_with(at, "tok/s per request")
    # the sweep's benchmarked loads by default (mean concurrencies 0.99, 7.8, 30.6 stored as 1, 8, 31)
    at.text_input(key="whatif_schedule_loads").set_value("1,8,31").run()
    table = table_with(at, "tok/s per request")
    assert table["concurrency"].tolist() == [1.0, 8.0, 31.0]
    assert set(table["baseline"]) == {"estimated"}
    # uncalibrated, the priors on the estimated step: the deepest pays at one request, less at 31
    assert table["K"].iloc[0] >= table["K"].iloc[-1] >= 1
    assert any("estimated" in unmd(w.value) for w in at.warning)
