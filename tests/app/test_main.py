"""The Streamlit app, run by AppTest on real databases: every page renders, and the Overview and Checkpoints
pages show what the demo data says."""

import pytest

from specdash.app.text import unmd
from specdash.db.engine import make_engine, transaction
from specdash.db.models import Run
from tests.app_support import run_page, table_with

PAGES = [
    "views/overview.py",
    "views/leaderboard.py",
    "views/checkpoints.py",
    "views/runs.py",
    "views/upload.py",
    "views/alerts.py",
    "views/whatif.py",
    "views/settings.py",
]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_on_the_demo(monkeypatch, demo_url, page):
    at = run_page(monkeypatch, demo_url, page)
    assert not at.exception
    assert at.title[0].value


def test_empty_database_renders(monkeypatch, db_url):
    for page in PAGES:
        at = run_page(monkeypatch, db_url, page)
        assert not at.exception, page


def test_uninitialised_database_shows_the_fix(monkeypatch, tmp_path):
    at = run_page(monkeypatch, f"sqlite:///{tmp_path / 'none.db'}")
    assert "run 'specdash init' to create it" in at.error[0].value


def test_overview_shows_counts_alerts_and_latest_checkpoints(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url)
    assert [m.value for m in at.metric] == ["3", "6", "15", "2", "4", "1"]  # open alerts: one per benchmark
    errors = [unmd(e.value) for e in at.error]
    assert any("k25-eagle3-10k / epoch_3" in e and "gap +48.9%" in e for e in errors)
    # the lead line in plain words, the rule's own text one click away
    assert any(
        "slower than the first-principles prediction; the run is invalid: the server used EAGLE, the "
        "drafter is EAGLE3." in e
        for e in errors
    )
    assert any("ran EAGLE but the drafter is EAGLE3" in unmd(m.value) for m in at.markdown)
    assert any("trained 5 deep" in unmd(w.value) for w in at.warning)
    latest = table_with(at, "best_speedup").set_index("run")
    assert latest.loc["k25-eagle3-100k-ttt5", "best_speedup"] == f"{208.9 / 90:.2f}×"
    assert latest.loc["k25-eagle3-ttt3-smoke", "best_speedup"] == "-"  # never "None"
    assert latest.loc["k25-eagle3-100k-ttt5", "setting"] == "EAGLE3 5/1/6"


def test_overview_lists_the_runs_with_the_newest_checkpoints(monkeypatch, demo_url):
    from specdash.app import state

    monkeypatch.setattr(state, "LATEST_RUNS", 2)
    at = run_page(monkeypatch, demo_url)
    assert len(table_with(at, "best_speedup")) == 2
    assert any(c.value.startswith("The 2 runs with the newest checkpoints, of 3;") for c in at.caption)


def test_overview_says_a_thinned_parity_plot_counts_its_total(monkeypatch, demo_url):
    from specdash.app import state

    monkeypatch.setattr(state, "PARITY_POINTS", 8)
    at = run_page(monkeypatch, demo_url)
    # 5 sampled benchmark ids with a gap, 3 ids apart (tests/db/test_queries.py), of the 13 counted
    assert any(c.value.startswith("5 of 13 benchmarks shown") for c in at.caption)


def test_overview_switches_prediction_source(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url)
    at.selectbox(key="overview_source").select("roofline-sim").run()
    assert not at.exception
    assert any(c.value.startswith("3 benchmarks.") for c in at.caption)


def test_checkpoints_page_overlays_a_run(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/checkpoints.py")
    assert at.multiselect(key="checkpoints_runs").value == ["k25-eagle3-100k-ttt5"]
    table = table_with(at, "measured_tps")
    assert table["checkpoint"].tolist() == ["epoch_1", "epoch_2", "epoch_3", "epoch_4", "epoch_5"]
    assert table["measured_tps"].tolist() == pytest.approx([181.9, 197.5, 191.1, 203.1, 208.9])
    assert at.selectbox(key="checkpoints_loss").value == "train/loss"
    assert len(at.download_button) == 1


def test_checkpoints_page_compares_two_runs_at_one_setting(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/checkpoints.py")
    at.multiselect(key="checkpoints_runs").select("k25-eagle3-10k").run()
    setting = at.selectbox(key="checkpoints_setting")
    setting.select(next(o for o in setting.options if o.startswith("EAGLE3 3/1/4"))).run()
    assert not at.exception
    table = table_with(at, "measured_tps")
    assert set(zip(table["run"], table["checkpoint"], strict=True)) == {
        ("k25-eagle3-100k-ttt5", "epoch_5"),
        ("k25-eagle3-10k", "epoch_3"),
    }


def test_names_from_files_are_shown_as_text(monkeypatch, demo_url):
    hostile = "[click](https://example.com) <b>x</b> **bold**"
    with transaction(make_engine(demo_url)) as session:
        session.get(Run, 1).name = hostile
    at = run_page(monkeypatch, demo_url)
    story = next(e.value for e in at.error if "epoch" in e.value)
    assert r"\[click\]\(https\:\/\/example\.com\) \<b\>x\<\/b\> \*\*bold\*\*" in story
    assert f"**  \n{hostile} / epoch_3 on" in unmd(story)  # after the lead line, the name as written


def test_the_parity_plot_gets_the_pages_width_and_a_narrow_legend(monkeypatch, real_url):
    """Beside the alerts the parity plot had ~230 px, its legend as wide (34-character names)."""
    import json

    from specdash.app.parity_charts import LEGEND_WIDTH

    at = run_page(monkeypatch, real_url)
    assert not at.exception
    [parity] = [c for c in at.get("plotly_chart") if c.proto.id.endswith("overview_parity")]
    assert not [
        c for column in at.columns for c in column.get("plotly_chart") if c.proto.id == parity.proto.id
    ]
    names = [t["name"] for t in json.loads(parity.proto.spec)["data"] if t.get("name")]
    assert len(names) > 5 and max(len(name) for name in names) <= LEGEND_WIDTH
