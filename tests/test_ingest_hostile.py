"""The seeded generator of hostile inputs (tests/hostile.py): every case handled, per category. A small
batch runs with the suite; `pytest -m hostile` runs 3,000 more."""

import pytest

from tests import hostile
from tests.ingest_support import SGLANG, content, load


@pytest.fixture
def used(engine):
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    return engine


def _run(engine, count: int, seed: int):
    outcomes = [hostile.check(engine, case, content) for case in hostile.generate(count, seed)]
    wrong = [f"{o.case.category} {o.case.name}: {o.why}" for o in outcomes if not o.correct]
    return outcomes, wrong


def test_every_category_of_a_small_seeded_batch_is_handled(used):
    outcomes, wrong = _run(used, len(hostile.CATEGORIES) * len(hostile.SOURCES), seed=15)
    assert {o.case.category for o in outcomes} == set(hostile.CATEGORIES)
    assert wrong == []


def test_the_generator_is_seeded():
    first = [(c.category, c.name, c.data) for c in hostile.generate(60, seed=3)]
    assert first == [(c.category, c.name, c.data) for c in hostile.generate(60, seed=3)]
    assert first != [(c.category, c.name, c.data) for c in hostile.generate(60, seed=4)]


def test_the_judge_catches_what_it_looks_for(used):
    """A case the pipeline accepts although it must fail is judged wrong: the check can fail."""
    valid = (SGLANG / "bench_serving_0.5.9.jsonl").read_bytes()
    case = hostile.Case("implausible", "sglang", "x/bench.jsonl", valid, must_fail=True, what="nothing")
    assert not hostile.check(used, case, content).correct


@pytest.mark.hostile
def test_a_large_seeded_batch_is_handled(used):
    _, wrong = _run(used, 3000, seed=7)
    assert wrong == []
