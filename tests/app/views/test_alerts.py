"""The Alerts page's table and facts on real data: filters from the URL (the Leaderboard links here), one gap
format, no `None` or unrounded numbers, and columns that long names cannot push off-screen."""

import re

from tests.app_support import run_page, table_with

SB_DRAFTER = "lmsys/SGLang-EAGLE3-Qwen3-30B-A3B-Instruct-2507-SpecForge"
SB_DEPLOYMENT = "SpecBundle: Qwen3-30B-A3B-Instruct-2507"


def test_filters_come_from_the_url_and_go_back_to_it(monkeypatch, real_url):
    at = run_page(
        monkeypatch, real_url, "views/alerts.py", query={"run": SB_DRAFTER, "deployment": SB_DEPLOYMENT}
    )
    assert not at.exception
    assert at.selectbox(key="alerts_run").value == SB_DRAFTER
    assert at.selectbox(key="alerts_deployment").value == SB_DEPLOYMENT
    table = table_with(at, "diagnoses")
    assert set(table["run"]) == {SB_DRAFTER} and set(table["deployment"]) == {SB_DEPLOYMENT}
    at.selectbox(key="alerts_source").select("theory").run()
    assert at.query_params["source"] == "theory" and at.query_params["run"] == SB_DRAFTER


def test_one_gap_format_and_no_none_in_the_facts(monkeypatch, real_url):
    at = run_page(monkeypatch, real_url, "views/alerts.py", query={"run": SB_DRAFTER})
    table = table_with(at, "diagnoses")
    # the table holds the gap in percent points, shown as %+.1f%% like every other gap on the pages
    gap_column = next(c for c in at.dataframe if "diagnoses" in c.value.columns).proto.columns
    assert '"format": "%+.1f%%"' in gap_column or "%+.1f%%" in gap_column
    assert abs(table["gap"].iloc[0]) >= 10  # percent points, not a fraction
    facts = table_with(at, "what")
    values = dict(zip(facts["what"], facts["value"], strict=True))
    assert "None" not in facts["value"].tolist() and "nan" not in facts["value"].tolist()
    assert re.fullmatch(r"\d+(,\d{3})*\.\d", values["baseline tok/s"]), values["baseline tok/s"]
