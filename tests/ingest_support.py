"""Helpers the ingest tests share: the full content of a database, and one-line ingest with checks."""

import json
from pathlib import Path

from sqlalchemy import select, text

from specdash.db.engine import reading
from specdash.db.models import Benchmark, MetricKey, MetricPoint, Run
from specdash.db.schema import store_metadata
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import COMMIT, IngestPolicy
from specdash.ingest.results import IngestResult
from specdash.ingest.sources import PathSource
from tests.conftest import FIXTURES

SGLANG = FIXTURES / "sglang"
VLLM = FIXTURES / "vllm"
SPECFORGE = FIXTURES / "specforge"


def content(engine) -> dict[str, list[tuple]]:
    """Every row of every table, in a stable order: equal before and after means nothing was written."""
    with reading(engine) as session:
        return {
            table.name: sorted(
                (tuple(repr(v) for v in row) for row in session.execute(text(f"SELECT * FROM {table.name}"))),
            )
            for table in store_metadata().sorted_tables
        }


def load(engine, path: Path, policy: IngestPolicy = COMMIT) -> IngestResult:
    result = ingest(engine, PathSource(path), policy)
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert not result.problems, [str(p) for p in result.problems]
    return result


def benchmarks(engine, **where) -> list[Benchmark]:
    with reading(engine) as session:
        query = select(Benchmark).order_by(Benchmark.id)
        for name, value in where.items():
            query = query.where(getattr(Benchmark, name) == value)
        rows = list(session.scalars(query))
        for row in rows:  # load what the assertions read before the session closes
            _ = row.deployment.name, row.checkpoint and row.checkpoint.run.name
        return rows


def native(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def points(engine, run: str) -> dict[tuple[str, int], float]:
    with reading(engine) as session:
        return {
            (key, step): value
            for key, step, value in session.execute(
                select(MetricKey.name, MetricPoint.step, MetricPoint.value)
                .join(MetricPoint, MetricPoint.key_id == MetricKey.id)
                .join(Run, MetricPoint.run_id == Run.id)
                .where(Run.name == run)
            )
        }
