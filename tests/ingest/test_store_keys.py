"""A file's benchmarks told apart by record key while it is stored (ingest/benchmarks.py), the keys let go
once it is: the refresh that follows in its transaction needs only the ids."""

from specdash.db.engine import file_transaction
from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem
from specdash.ingest.records import BenchmarkRecord
from specdash.ingest.store import store_records


def test_a_repeated_record_is_a_duplicate_and_the_keys_go_once_the_file_is_stored(engine):
    record = BenchmarkRecord(deployment="8x H100, TP8", concurrency=4, dataset="mt-bench", decode_tps=60.0)
    other = BenchmarkRecord(deployment="8x H100, TP8", concurrency=8, dataset="mt-bench", decode_tps=90.0)
    problems: list[Problem] = []
    with file_transaction(engine) as session:
        items = [Located(1, record), Located(2, other), Located(3, record)]
        store = store_records(session, "specdash", "b.jsonl", items, None, problems)
        assert problems == []
        assert store.summary.created["benchmark"] == 2 and store.summary.duplicates == 1
        assert len(store.summary.benchmark_ids) == 2
        assert not store.benchmarks._keys and not store.benchmarks._prefetched_all
