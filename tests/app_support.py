"""Fixtures for the dashboard's tests on real data: the demo together with the published SpecBundle results
(tests/fixtures/real/specbundle-data.json), built once per test session and copied per test."""

import json
from collections import defaultdict
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import specdash.app
from specdash.answers.calibrate import calibrate
from specdash.answers.refresh import refresh
from specdash.db.calibration import apply_calibration
from specdash.db.engine import transaction
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.conftest import FIXTURES, built_template, copy_of

APP = str(Path(specdash.app.__file__).resolve().parent / "main.py")
SPECBUNDLE = FIXTURES / "real" / "specbundle-data.json"
BASELINE_NAME = "Wihtout EAGLE3"  # [sic], as published


def specbundle_rows() -> list[dict]:
    """The file's drafter and baseline rows, flattened: model, benchmark, batch size, setting, name, numbers;
    each distinct row once (the file repeats its baselines under every setting)."""
    document = json.loads(SPECBUNDLE.read_text())
    rows, seen = [], set()
    for model, benchmarks in document.items():
        for benchmark, block in benchmarks.items():
            for result in block["results"]:
                for metric in result["metrics"]:
                    baseline = metric["Name"] == BASELINE_NAME
                    key = (model, benchmark, result["batch_size"], metric["Name"]) + (
                        () if baseline else (result["steps"], result["topk"], result["num_draft_tokens"])
                    )
                    if key in seen:
                        continue
                    seen.add(key)
                    rows.append(
                        {
                            "model": model,
                            "benchmark": benchmark,
                            "batch_size": result["batch_size"],
                            "steps": result["steps"],
                            "topk": result["topk"],
                            "num_draft_tokens": result["num_draft_tokens"],
                            "name": metric["Name"],
                            "baseline": baseline,
                            "output_throughput": metric["output_throughput"],
                            "accept_length": metric["accept_length"],
                        }
                    )
    return rows


def chain_accept_lengths(drafter: str) -> dict[int, float]:
    """Mean published accept length per chain depth (top-k 1) of one drafter, over its datasets."""
    taus = defaultdict(list)
    for row in specbundle_rows():
        if row["name"] == drafter and row["topk"] == 1:
            taus[row["steps"]].append(row["accept_length"])
    return {k: sum(v) / len(v) for k, v in sorted(taus.items())}


def load_specbundle(engine) -> None:
    result = ingest(engine, UploadSource(SPECBUNDLE.name, SPECBUNDLE.read_bytes()))
    assert result.ok, result.problems


def calibrate_all(engine) -> None:
    """Every deployment that can be calibrated calibrated, the calibrations applied."""
    with transaction(engine) as session:
        for report in calibrate(session):
            apply_calibration(session, report)
        refresh(session)


@pytest.fixture(scope="session")
def _real_template(tmp_path_factory, _demo_template) -> Path:
    """The demo's template with the SpecBundle results ingested into it."""
    return built_template(tmp_path_factory.mktemp("real"), "real.db", _demo_template, load_specbundle)


@pytest.fixture
def real_url(tmp_path, _real_template) -> str:
    """A fresh copy of a database holding the demo and the SpecBundle results."""
    return copy_of(_real_template, tmp_path)


@pytest.fixture(scope="session")
def _calibrated_template(tmp_path_factory, _real_template) -> Path:
    """The real template, calibrated."""
    return built_template(
        tmp_path_factory.mktemp("calibrated"), "calibrated.db", _real_template, calibrate_all
    )


@pytest.fixture
def calibrated_url(tmp_path, _calibrated_template) -> str:
    """A fresh copy of a database holding the demo and the SpecBundle results, calibrated."""
    return copy_of(_calibrated_template, tmp_path)


def run_page(monkeypatch, url: str, page: str | None = None, query: dict | None = None) -> AppTest:
    monkeypatch.setenv("SPECDASH_DB_URL", url)
    at = AppTest.from_file(APP, default_timeout=30)
    if page:  # straight to the page: one run of the script, not the Overview's first
        at.switch_page(page)
        if query:
            at.query_params.update(query)
    at.run()
    return at


def table_with(at: AppTest, column: str):
    """The first table on the page that has `column` (display-only tables carry no key in AppTest)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)
