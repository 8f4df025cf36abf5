"""Big files: no statement may carry more bound parameters than the backend allows (SQLite's is set per
connection; PostgreSQL's protocol caps it at 65535), however many benchmarks one file brings."""

import json
import sqlite3

import pytest
from sqlalchemy import event, func, select, text

from specdash.answers.refresh import refresh
from specdash.db import bulk
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert, Benchmark, Gap, MetricKey, Prediction
from specdash.db.schema import upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnConflict
from specdash.ingest.sources import PathSource

# Bound parameters per statement on this test's connections (SQLite's oldest default, 999, plus room), and
# specdash's IN lists cut at CHUNK under it: the chunking is tested at a scale that loads in seconds.
LIMIT = 1001
CHUNK = 400
BENCHMARKS = 2_500  # more than twice the limit: any IN list of a file's ids fails


def benchmark_lines(count: int):
    """`count` distinct benchmarks on two deployments: a baseline in four (concurrency 1, 5, 9, 13), the rest
    EAGLE3 3/1/4 on three checkpoints at the loads between (their baselines interpolated)."""
    for n in range(count):
        record = {
            "kind": "benchmark",
            "deployment": "1x H100" if n // 4 % 2 else "8x H100, TP8, NVLink",
            "concurrency": 1 + n % 16,
            "dataset": f"set-{n // 16}",
            "decode_tps": 60.0 + n % 50,
        }
        if n % 4:
            record |= {
                "speculative_algorithm": "EAGLE3",
                "num_steps": 3,
                "topk": 1,
                "num_draft_tokens": 4,
                "accept_length": 2.0 + (n % 5) / 10,
                "run": "big",
                "checkpoint": f"epoch_{n % 3}",
            }
        yield json.dumps(record) + "\n"


@pytest.fixture
def limited(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk, "CHUNK", CHUNK)
    engine = make_engine(f"sqlite:///{tmp_path / 'big.db'}")
    upgrade(engine)
    engine.dispose()

    @event.listens_for(engine, "connect")
    def _limit(connection, _record):
        connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, LIMIT)

    yield engine
    engine.dispose()


@pytest.mark.slow
def test_a_file_of_many_benchmarks_loads_under_the_parameter_limit(limited, tmp_path):
    path = tmp_path / "big.jsonl"
    path.write_text("".join(benchmark_lines(BENCHMARKS)))
    with limited.connect() as connection:  # the limit holds: one statement over it is refused
        with pytest.raises(Exception, match="too many SQL variables"):
            connection.exec_driver_sql(
                f"SELECT 1 WHERE 1 IN ({', '.join('?' * (LIMIT + 1))})", tuple(range(LIMIT + 1))
            )
    result = ingest(limited, PathSource(path))
    assert result.status == "loaded", [str(p) for p in result.problems][:3]
    speculative = BENCHMARKS * 3 // 4
    with reading(limited) as session:
        assert session.scalar(select(func.count()).select_from(Benchmark)) == BENCHMARKS
        # every speculative benchmark has its theory gap and its verdict
        assert session.scalar(select(func.count()).select_from(Gap)) == speculative
        assert session.scalar(select(func.count()).select_from(Alert)) == speculative
    assert result.refresh.benchmarks == speculative
    # a full refresh (a new threshold, a calibration) and a second ingest of the file also stay under it
    with transaction(limited) as session:
        predictions = session.scalar(select(func.count()).select_from(Prediction))
        summary = refresh(session)
    assert summary.benchmarks == speculative and summary.predictions == predictions
    again = ingest(limited, PathSource(path), IngestPolicy(on_conflict=OnConflict.REPLACE))
    assert again.status == "loaded" and f"({BENCHMARKS} benchmark(s) removed)" in again.message


def test_a_file_transaction_reads_the_store_without_its_memory_map(tmp_path):
    # pages read through the map stay resident in the ingesting process: a big file's peak memory
    from specdash.db.engine import SQLITE_MMAP_BYTES, file_transaction

    engine = make_engine(f"sqlite:///{tmp_path / 'map.db'}")
    upgrade(engine)
    for bulk_points in (False, True):
        with file_transaction(engine, bulk_points) as session:
            assert session.connection().exec_driver_sql("PRAGMA mmap_size").scalar() == 0
        with engine.connect() as connection:  # the pooled connection the transaction used
            assert connection.exec_driver_sql("PRAGMA mmap_size").scalar() == SQLITE_MMAP_BYTES
            assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_diagnoses_are_stored_as_the_text_they_are_compared_as(demo_url):
    """A gap's diagnoses are judged as JSON text and inserted as that text; a rewritten gap's go through
    the column's type. Either way the store holds one JSON array, read back as a list of diagnoses."""
    engine = make_engine(demo_url)
    with reading(engine) as session:
        texts = dict(session.execute(text("SELECT id, diagnoses FROM gap")).all())
        diagnosed = [i for i, value in texts.items() if value != "[]"]
        assert diagnosed and all(json.dumps(json.loads(value)) == value for value in texts.values())
        first = session.get(Gap, diagnosed[0])
        assert isinstance(first.diagnoses, list) and first.diagnoses[0]["code"]
    with transaction(engine) as session:
        session.execute(text("UPDATE gap SET diagnoses = '[]' WHERE id = :id"), {"id": diagnosed[0]})
        refresh(session)
    with reading(engine) as session:
        assert (
            session.execute(text("SELECT diagnoses FROM gap WHERE id = :id"), {"id": diagnosed[0]}).scalar()
            == texts[diagnosed[0]]
        )


@pytest.mark.parametrize("json_functions", [True, False])
def test_a_chunked_select_finds_exactly_the_values_given(tmp_path, monkeypatch, json_functions):
    # on SQLite the values travel as one JSON array (an IN list where SQLite lacks its JSON functions, or
    # a string holds a NUL): names JSON escapes, or that look like numbers, match only themselves; ids
    # match as integers; every chunk is read, an empty list reads nothing
    monkeypatch.setattr(bulk, "CHUNK", 3)
    monkeypatch.setattr(bulk, "_sqlite_reads_json", lambda: json_functions)
    assert bulk.in_form("sqlite", [1, "a"]) == ("json" if json_functions else "list")
    assert bulk.in_form("sqlite", ["a\x00b"]) == "list"
    engine = make_engine(f"sqlite:///{tmp_path / 'in.db'}")
    upgrade(engine)
    names = ['loss/a"b', "acc\\0", "Ω tau 𝄞", "123", "1e3", "plain", "nul\x00byte", "tab\there"]
    with transaction(engine) as session:
        session.add_all(MetricKey(name=name) for name in [*names, "not asked", "12"])
    query = select(MetricKey.name, MetricKey.id)
    with reading(engine) as session:
        found = dict(bulk.select_in(session, query, MetricKey.name, names))
        assert sorted(found) == sorted(names)
        ids = [found["123"], found["Ω tau 𝄞"], found["plain"], found["tab\there"]]
        by_id = [name for name, _ in bulk.select_in(session, query, MetricKey.id, ids)]
        assert sorted(by_id) == sorted(["123", "Ω tau 𝄞", "plain", "tab\there"])
        assert list(bulk.select_in(session, query, MetricKey.name, [])) == []
        assert list(bulk.select_in(session, query, MetricKey.name, ["absent", "12 "])) == []
    engine.dispose()
