"""The Streamlit app, run by AppTest on real databases."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import specdash.app

APP = str(Path(specdash.app.__file__).resolve().parent / "main.py")
PAGES = ["views/overview.py", "views/checkpoints.py"]


def run_page(monkeypatch, url: str, page: str | None = None) -> AppTest:
    monkeypatch.setenv("SPECDASH_DB_URL", url)
    at = AppTest.from_file(APP, default_timeout=30)
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    return at


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_on_the_demo(monkeypatch, demo_url, page):
    at = run_page(monkeypatch, demo_url, page)
    assert not at.exception


def test_overview_shows_the_story_alert(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url)
    assert [m.value for m in at.metric][:4] == ["3", "6", "15", "2"]
    errors = [e.value for e in at.error]
    assert any("k25-eagle3-10k / epoch_3" in e and "gap +48.9%" in e for e in errors)
    assert any("ran EAGLE but the drafter is EAGLE3" in e for e in errors)


def test_checkpoints_page_overlays_a_run(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/checkpoints.py")
    at.selectbox(key="checkpoints_run").select("k25-eagle3-100k-ttt5").run()
    assert not at.exception
    table = at.dataframe[0].value
    assert set(table["checkpoint"]) == {"epoch_1", "epoch_2", "epoch_3", "epoch_4", "epoch_5"}


def test_uninitialised_database_shows_the_fix(monkeypatch, tmp_path):
    at = run_page(monkeypatch, f"sqlite:///{tmp_path / 'none.db'}")
    assert "run 'specdash init' to create it" in at.error[0].value


def test_empty_database_renders(monkeypatch, db_url):
    for page in PAGES:
        at = run_page(monkeypatch, db_url, page)
        assert not at.exception
