"""The bounds of ingest/rules/ against every benchmark of the engine fixtures (tests/fixtures): none is
refused, and the bounds are the physical ones (one-sided where physics is), not the files' worst case."""

import io

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.read import detect_file, parse_file
from specdash.ingest.records import BenchmarkRecord
from specdash.ingest.rules import record_problems
from tests.ingest_support import FIXTURES

FOLDERS = ("real", "sglang", "vllm", "guidellm", "specforge")
SKIP_SUFFIXES = {".md", ".py", ""}


def _benchmarks() -> list[tuple[str, int | None, BenchmarkRecord]]:
    found = []
    for folder in FOLDERS:
        for path in sorted((FIXTURES / folder).iterdir()):
            if path.suffix in SKIP_SUFFIXES or path.name.startswith("LICENSE"):
                continue
            data = path.read_bytes()
            fmt = detect_file(lambda data=data: io.BytesIO(data), path.name, None)
            if not hasattr(fmt, "parse"):
                continue  # a config file, not a benchmark
            records: list = []
            parse_file(
                fmt,
                path.name,
                lambda data=data: io.BytesIO(data),
                LinkOptions(deployment="d"),
                None,
                [],
                records.append,
            )
            where = f"{folder}/{path.name}"
            found += [
                (where, item.line, item.record)
                for item in records
                if isinstance(item.record, BenchmarkRecord)
            ]
    return found


BENCHMARKS = _benchmarks()


def test_the_real_files_hold_enough_benchmarks_to_measure():
    assert len(BENCHMARKS) > 800  # SpecBundle's 740 and every engine fixture
    assert {where.split("/")[0] for where, _, _ in BENCHMARKS} == set(FOLDERS)


def test_the_aggregate_is_bounded_above_only():
    """Idle, queued or disaggregated time lowers the aggregate without a floor: a thousandth of per-request
    decode x concurrency keeps the rule; the ceiling is concurrency x decode x the rates' spread x the
    first-token share L / (L - 1)."""
    from specdash.ingest.rules.bounds import aggregate_ceiling, aggregate_refusal

    record = BenchmarkRecord(deployment="d", decode_tps=100.0, concurrency=64, output_throughput=6.4)
    assert aggregate_refusal(record) is None
    assert aggregate_ceiling(record)[0] == pytest.approx(100 * 64 * 2 * 2)  # output length unknown: L = 2
    told = record.model_copy(update={"raw": {"total_output_tokens": 128 * 50, "completed": 50}})
    assert aggregate_ceiling(told)[0] == pytest.approx(100 * 64 * 2 * 128 / 127)
    assert aggregate_refusal(told.model_copy(update={"output_throughput": 12_901.0})) is not None
    assert aggregate_refusal(told.model_copy(update={"output_throughput": 12_900.0})) is None


def test_survival_is_held_to_the_identity_only_where_one_set_of_counters_gives_both():
    from specdash.ingest.rules.bounds import survival_refusal

    chain = BenchmarkRecord(
        deployment="d",
        decode_tps=100.0,
        speculative_algorithm="EAGLE3",
        num_steps=3,
        num_draft_tokens=4,
        accept_length=2.9,
        position_survival=[0.8, 0.6, 0.5],
    )
    assert survival_refusal(chain) is None
    assert survival_refusal(chain.model_copy(update={"accept_length": 2.91})) is not None  # > 0.0065 off
    # a log's summary: the median accept length and the survival of other intervals
    summary = chain.model_copy(
        update={"accept_length": 2.7, "interval_count": 5, "concurrency_source": "log"}
    )
    assert survival_refusal(summary) is None


def test_decode_against_tpot():
    """The engine formats derive per-request decode from the TPOT they print: they agree to rounding."""
    factors = [
        (max(r.decode_tps * r.median_tpot_ms / 1000, 1000 / (r.decode_tps * r.median_tpot_ms)), f"{w}:{line}")
        for w, line, r in BENCHMARKS
        if r.median_tpot_ms
    ]
    assert factors and max(factors)[0] < 1.01, max(factors)


def test_no_rule_refuses_a_real_file():
    refused = [str(p) for w, line, r in BENCHMARKS for p in record_problems(r, w, line)]
    assert refused == []
