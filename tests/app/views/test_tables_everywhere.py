"""Every table on every page reads like the rest (app/tables.py): headers in words with their units, not a
store's column names; numbers rounded (no four decimals); a dash, never a literal `None`, where a value is
missing; long names given room. Pages are opened on the demo with the real SpecBundle results and an applied
calibration (Live after a scrape, Upload after a save)."""

import json
import re

import pandas as pd
import pytest

from specdash.app import tables
from specdash.db.engine import make_engine
from specdash.ingest.live.scrape import Scraper
from specdash.ingest.live.sources import fetch_scrape
from specdash.ingest.live.windows import WindowOptions
from tests.app_support import run_page
from tests.conftest import FIXTURES
from tests.scrape_support import MetricsServer, RecordedClock

pytestmark = pytest.mark.slow

PAGES = [
    "views/overview.py",
    "views/leaderboard.py",
    "views/checkpoints.py",
    "views/runs.py",
    "views/alerts.py",
    "views/whatif.py",
    "views/live.py",
    "views/settings.py",
    "views/upload.py",
]
# a rounded number: at most three decimals, a whole number, a version, a percent or a factor
ROUNDED = re.compile(r"^[^%]*%[+]?\.[0-3]f(%%|×| ms)?$|^v?%d$")
UPLOAD = FIXTURES / "dashboard" / "sglang_bench_serving_deep.jsonl"


@pytest.fixture
def full_url(calibrated_url):
    """The demo and SpecBundle, every deployment that can be calibrated calibrated, one scraped drafter."""
    engine = make_engine(calibrated_url)
    with MetricsServer("vllm_collapse.prom") as server:
        clock = RecordedClock(server)
        scraper = Scraper(engine, WindowOptions("pcie-box", "r7", "epoch_2", window_seconds=15))
        for _ in server.scrapes:
            scraper.add(fetch_scrape(server.url, now=clock))
    return calibrated_url


def problems(at, page: str) -> list[str]:
    """What a reader would stumble on in the page's tables."""
    found = []
    for table in at.dataframe:
        config = json.loads(table.proto.columns or "{}")
        if table.proto.placeholder != tables.MISSING:
            found.append(f"{page}: a table shows a missing value as None ({list(table.value.columns)})")
        for column in table.value.columns:
            spec = config.get(str(column)) or {}
            if str(column) in config and config[str(column)] is None:
                continue  # hidden
            label = spec.get("label") or str(column)
            if "_" in label:
                found.append(f"{page}: header {label!r}")
            values = table.value[column]
            if values.dtype.kind == "f" and values.notna().any():
                fmt = (spec.get("type_config") or {}).get("format")
                if not fmt or not ROUNDED.match(fmt):
                    found.append(f"{page}: {label!r} unrounded ({fmt})")
            if pd.api.types.is_string_dtype(values) or pd.api.types.is_object_dtype(values):
                text = values.dropna().astype(str)
                if text.isin(["None", "nan", "NaN", "<NA>"]).any():
                    found.append(f"{page}: {label!r} holds the text None")
    return found


def test_every_table_on_every_page(monkeypatch, full_url):
    found, seen = [], 0
    for page in PAGES:
        at = run_page(monkeypatch, full_url, page)
        if page == "views/upload.py":  # its tables show once a file is checked, and after saving
            at.file_uploader[0].set_value(
                [(UPLOAD.name, UPLOAD.read_bytes(), "application/octet-stream")]
            ).run()
            found += problems(at, page + " (check)")
            at.button(key="upload_save").click().run()
        assert not at.exception, (page, at.exception)
        assert at.dataframe, f"{page} shows no table"
        seen += len(at.dataframe)
        found += problems(at, page)
    assert not found, "\n".join(found)
    assert seen >= 20


def test_headers_in_words():
    assert tables.header("predicted_accept_length") == "predicted τ"
    assert tables.header("gap_id") == "gap #"
    assert tables.header("p90_round_ms") == "p90 round ms"
    assert tables.header("is_alert") == "alert"
    assert tables.header("deployment") == "deployment"


def test_numbers_rounded_by_size_and_whole_numbers_kept_whole():
    assert tables.number_format(pd.Series([1234.5678, 99.1])) == "%.1f"
    assert tables.number_format(pd.Series([2.0452, 1.5])) == "%.2f"
    assert tables.number_format(pd.Series([0.0123, 0.05])) == "%.3f"
    assert tables.number_format(pd.Series([8.0, None, 4.0])) == "%d"  # GPUs stored beside a missing one
    assert tables.number_format(pd.Series([1, 2])) is None  # integers show as they are


def test_a_page_config_is_kept_and_completed():
    frame = pd.DataFrame(
        {
            "run": ["lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"],
            "measured_tps": [258.6437],
            "id": [1],
        }
    )
    config = tables.column_config(frame, {"id": None, "measured_tps": {"help": "per request"}})
    assert config["id"] is None
    assert config["measured_tps"]["label"] == "measured tok/s"
    assert config["measured_tps"]["help"] == "per request"
    assert config["measured_tps"]["type_config"]["format"] == "%.1f"
    assert config["run"]["width"] == tables.NAME_WIDTH  # a long name gets room (51 characters)
    short = tables.column_config(
        pd.DataFrame({"checkpoint": ["epoch_3"], "diagnoses": ["acceptance_shortfall"]})
    )
    assert short["checkpoint"].get("width") is None  # fits as the grid draws it
    assert short["diagnoses"]["width"] == tables.CHAR_PX * 20 + 24


def test_rows_shown_before_the_table_scrolls():
    assert tables.height(0) == tables.height(1) == tables.HEADER_PX + tables.ROW_PX + 2
    assert tables.height(40) == tables.HEADER_PX + tables.ROW_PX * tables.VISIBLE_ROWS + 2
