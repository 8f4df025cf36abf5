"""The evidence for the tolerances of ingest/rules/tolerances.py: how far the engines' own fields disagree
on every real file in tests/fixtures, and each tolerance above the worst (with room to spare)."""

import io

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.read import detect_file, parse_file
from specdash.ingest.records import BenchmarkRecord
from specdash.ingest.rules import record_problems, tolerances
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


def _worst(values: list[tuple[float, str]]) -> tuple[float, str]:
    assert values, "no real file carries both fields"
    return max(values)


def test_the_real_files_hold_enough_benchmarks_to_measure():
    assert len(BENCHMARKS) > 800  # SpecBundle's 740 and every engine fixture
    assert {where.split("/")[0] for where, _, _ in BENCHMARKS} == set(FOLDERS)


def test_decode_times_concurrency_against_the_aggregate():
    above = [
        (r.decode_tps * r.concurrency / r.output_throughput, f"{w}:{line}")
        for w, line, r in BENCHMARKS
        if r.output_throughput
    ]
    below = [(1 / ratio, where) for ratio, where in above]
    worst_above, worst_below = _worst(above), _worst(below)
    assert worst_above[0] == pytest.approx(4.35, abs=0.01), worst_above
    assert worst_below[0] == pytest.approx(1.02, abs=0.01), worst_below
    assert tolerances.AGGREGATE_ABOVE >= 2 * worst_above[0]
    assert tolerances.AGGREGATE_BELOW >= 1.5 * worst_below[0]


def test_survival_against_the_stated_accept_length():
    shares = [
        (abs(1 + sum(r.position_survival) - r.accept_length) / r.accept_length, f"{w}:{line}")
        for w, line, r in BENCHMARKS
        if r.position_survival and r.accept_length and (r.topk or 1) == 1 and not r.drafts_a_block()
    ]
    worst = _worst(shares)
    assert len(shares) >= 10  # vLLM's bench serve results and server logs
    assert worst[0] == pytest.approx(0.073, abs=0.001), worst
    assert tolerances.SURVIVAL_SHARE >= 2 * worst[0]


def test_decode_against_tpot():
    factors = [
        (max(r.decode_tps * r.median_tpot_ms / 1000, 1000 / (r.decode_tps * r.median_tpot_ms)), f"{w}:{line}")
        for w, line, r in BENCHMARKS
        if r.median_tpot_ms
    ]
    worst = _worst(factors)
    assert worst[0] < 1.01, worst
    assert tolerances.TPOT_FACTOR >= 2 * worst[0] - 0.03


def test_no_rule_refuses_a_real_file():
    refused = [str(p) for w, line, r in BENCHMARKS for p in record_problems(r, w, line)]
    assert refused == []
