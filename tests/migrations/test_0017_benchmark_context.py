"""Revision 0017 adds each benchmark's mean input and output tokens per request: a store at 0016 keeps every
row through the upgrade, and benchmarks whose raw record states the lengths get them filled (here an SGLang
`bench_serving` sweep: 3 requests, 3,072 input and 1,536 output tokens in all, at each of three loads, and a
`bench_offline_throughput` run); a downgrade drops the two columns and keeps the rest."""

import sqlite3

from specdash.db.schema import current_revision, downgrade, upgrade
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import PathSource
from tests.migration_support import copied_store, tables

SWEEP = "tests/fixtures/sglang/bench_serving_sweep.jsonl"
OFFLINE = "tests/fixtures/sglang/bench_offline_throughput.jsonl"


def rows(path, table: str, columns: list[str]) -> list[tuple]:
    with sqlite3.connect(path) as con:
        return sorted(map(repr, con.execute(f"SELECT {', '.join(columns)} FROM {table}")))


def test_the_upgrade_keeps_every_row_and_fills_the_lengths_the_raw_records_state(real_url, tmp_path):
    path = tmp_path / "at-0016.db"
    engine = copied_store(real_url, path)
    assert ingest(engine, PathSource(SWEEP)).ok
    assert ingest(
        engine, PathSource(OFFLINE), IngestPolicy(link=LinkOptions(deployment="8x H100, TP8, NVLink"))
    ).ok
    downgrade(engine, "0016")
    before = {name: rows(path, name, columns) for name, columns in tables(path).items()}
    assert "input_tokens" not in tables(path)["benchmark"]
    upgrade(engine, "0017")
    assert current_revision(engine) == "0017"
    after = tables(path)
    assert {
        name: rows(path, name, [c for c in columns if c not in ("input_tokens", "output_tokens")])
        for name, columns in after.items()
    } == before
    with sqlite3.connect(path) as con:
        stated = con.execute(
            "SELECT concurrency, input_tokens, output_tokens FROM benchmark"
            " WHERE input_tokens IS NOT NULL ORDER BY concurrency"
        ).fetchall()
    # 3,072 / 3 and 1,536 / 3 at every load of the sweep; bench_offline_throughput's 512,000 and 256,000
    # over its 1,000 successful requests (every prompt at once: concurrency 1,000)
    assert stated == [(1, 1024.0, 512.0), (2, 1024.0, 512.0), (4, 1024.0, 512.0), (1000, 512.0, 256.0)]
    downgrade(engine, "0016")
    assert "input_tokens" not in tables(path)["benchmark"]
    assert {name: rows(path, name, columns) for name, columns in tables(path).items()} == before
    upgrade(engine)
    engine.dispose()
