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


def _sweep(engine, lengths: list[tuple[int, int, float]]) -> None:
    """The demo drafter k25-eagle3-10k/epoch_3 benchmarked at concurrency 1 at each (input, output, tok/s)."""
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.sources import UploadSource
    from tests.ingest_support import native

    record = {
        "kind": "benchmark",
        "deployment": "8x RTX PRO 6000, TP8, PCIe",
        "run": "k25-eagle3-10k",
        "checkpoint": "epoch_3",
        "speculative_algorithm": "EAGLE3",
        "num_steps": 3,
        "topk": 1,
        "num_draft_tokens": 4,
        "accept_length": 2.6,
        "dataset": "random",
    }
    rows = [{**record, "input_tokens": i, "output_tokens": o, "decode_tps": tps} for i, o, tps in lengths]
    assert ingest(engine, UploadSource("sweep.jsonl", native(*rows))).ok


def test_a_context_column_where_the_rows_differ_in_it(monkeypatch, demo_url):
    """A sweep over two prompt lengths lists each benchmark's in/out tokens; rows of one context (the
    demo's, none stated) show no such column."""
    from specdash.db.engine import make_engine

    query = {"run": "k25-eagle3-10k", "deployment": "8x RTX PRO 6000, TP8, PCIe"}
    before = run_page(monkeypatch, demo_url, "views/alerts.py", query=query)
    before.selectbox(key="alerts_show").select("every benchmark").run()
    assert not before.exception
    assert "context" not in table_with(before, "diagnoses").columns
    engine = make_engine(demo_url)
    _sweep(engine, [(1024, 512, 150.0), (8192, 512, 118.0)])
    engine.dispose()
    at = run_page(monkeypatch, demo_url, "views/alerts.py", query=query)
    at.selectbox(key="alerts_show").select("every benchmark").run()
    assert not at.exception
    table = table_with(at, "diagnoses")
    assert {"1,024 / 512", "8,192 / 512"} <= set(table["context"])
    assert set(table["context"]) - {"1,024 / 512", "8,192 / 512"} <= {"- / -"}  # the demo's own
    assert list(table.columns).index("context") == list(table.columns).index("setting") + 1
