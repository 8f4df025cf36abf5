"""The What-if's depth x load section over batch x context, on the sweep at two prompt lengths of
tests/fixtures/native/context_sweep.jsonl (its truth: tests/cli/test_schedule_context.py)."""

import pytest

from specdash.db.engine import make_engine
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import PathSource
from tests.app_support import run_page, table_with
from tests.conftest import FIXTURES

RUN = "llama31-eagle3-ctx"


@pytest.fixture
def sweep_url(db_url):
    engine = make_engine(db_url)
    assert ingest(engine, PathSource(FIXTURES / "native" / "context_sweep.jsonl")).ok
    engine.dispose()
    return db_url


def test_contexts_give_a_batch_by_context_map_and_a_table_per_context(monkeypatch, sweep_url):
    at = run_page(monkeypatch, sweep_url, "views/whatif.py", query={"run": RUN})
    assert not at.exception
    at.text_input(key="whatif_schedule_loads").set_value("1,16,64,128").run()
    at.text_input(key="whatif_schedule_contexts").set_value("1152,16512,64k").run()
    assert not at.exception
    table = table_with(at, "context")
    assert sorted(set(table["context"])) == [1152, 16512, 64000]
    by_cell = {(row.context, row.concurrency): row for row in table.itertuples()}
    # measured: no speculation pays at 1,152 tokens and batch 128; at 16,512 tokens it does at every batch
    assert by_cell[(1152, 128)].K == 0
    assert all(by_cell[(16512, b)].K > 0 for b in (1, 16, 64, 128))
    assert all(by_cell[(64000, b)].extrapolated for b in (1, 16, 64, 128))
    charts = [c for c in at.get("plotly_chart")]
    assert len(charts) >= 2  # the batch x context map and the depth x load map at the first context
    assert any("64,000 tokens" in w.value for w in at.warning)


def test_an_unreadable_context_list_says_how_to_write_one(monkeypatch, sweep_url):
    at = run_page(monkeypatch, sweep_url, "views/whatif.py", query={"run": RUN})
    at.text_input(key="whatif_schedule_contexts").set_value("long").run()
    assert any("context lengths in tokens" in e.value for e in at.error)
