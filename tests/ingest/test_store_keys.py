"""A file's benchmarks told apart by record key while it is stored (ingest/benchmarks.py), the keys let go
once it is: the refresh that follows in its transaction needs only the ids."""

from specdash.db.engine import file_transaction
from specdash.ingest.benchmarks import benchmark_record_key
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


def test_a_record_keeps_the_key_it_was_stored_under():
    """Keys stored by earlier versions: the same records must find them (a duplicate, not a new benchmark).
    Computed apart from specdash's code with the formula: sha256 of json.dumps(the fields but raw, label,
    kind, concurrency_source, input_tokens and output_tokens, sort_keys=True)."""
    every_field = BenchmarkRecord.model_validate(
        {
            "deployment": "8x H100, TP8, NVLink",
            "run": "k25",
            "checkpoint": "epoch_3",
            "drafter_path": "/ckpt/epoch_3",
            "engine": "sglang",
            "concurrency": 16,
            "concurrency_source": "file",
            "dataset": "mtbench",
            "num_prompts": 80,
            "input_tokens": 512.0,
            "output_tokens": 256.0,
            "decode_tps": 93.25,
            "output_throughput": 1402.5,
            "accept_length": 2.61,
            "median_tpot_ms": 10.7,
            "median_ttft_ms": 95.0,
            "median_itl_ms": 26.1,
            "speculative_algorithm": "EAGLE3",
            "num_steps": 3,
            "topk": 1,
            "num_draft_tokens": 4,
            "request_rate": float("inf"),
            "position_survival": [0.8, 0.55, 0.3],
            "engine_version": "0.5.1",
            "draft_hidden_size": 4096,
            "label": "rerun",
            "measured_at": "2026-11-30T12:00:00Z",
            "raw": {"b": 1, "a": {"z": 2}},
        }
    )
    assert (
        benchmark_record_key(every_field)
        == "9181b770892e83e34462bf185363b2b15543cdd6292b315032d9ed60b07f793a"
    )
    fewest = BenchmarkRecord(deployment="lab box", decode_tps=61.0)
    assert benchmark_record_key(fewest) == "26ed20d4b5b67a588b46a4b95c44fbc0fc9ab901f8a0fc1f26b686ec26061ec0"
