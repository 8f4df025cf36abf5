"""The seeded generator of hostile inputs (tests/hostile.py): every case handled, per category. A small
batch runs with the suite; `pytest -m hostile` runs 3,000 more, across every category (the plausible-nonsense ones of tests/hostile_rules.py included)."""

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


@pytest.mark.slow
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


def test_log_literals_with_escapes_or_deep_nesting_are_read_without_a_warning(used, tmp_path):
    """Python dict reprs in logs are read with ast.literal_eval: a '\\e' in a path would warn (a
    DeprecationWarning, a SyntaxWarning from 3.12), deep nesting would raise RecursionError."""
    import warnings

    from specdash.ingest.lines import python_literal
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.policy import IngestPolicy
    from specdash.ingest.sources import PathSource

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert python_literal(r"{'model': 'C:\evil'}") == {"model": "C:\\evil"}
        assert python_literal("[" * 100_000) is None
        log = tmp_path / "vllm_server.log"
        log.write_text(
            "(APIServer pid=7) INFO 12-01 09:00:01 [utils.py:326] non-default args: {'model': "
            "'meta-llama/Llama-3.1-8B-Instruct', 'speculative_config': \"{'method': 'eagle3', 'model': "
            + "["
            * 5000
            + "'x'}\"}\n"
            "(APIServer pid=7) INFO 12-01 09:00:02 [utils.py:326] non-default args: {'model': "
            "'meta-llama/Llama-3.1-8B-Instruct', 'speculative_config': \"{'method': 'eagle3', 'model': "
            "'D:\\eagle3\\epoch_3', 'num_speculative_tokens': 3}\"}\n"
        )
        before = content(used)
        result = ingest(used, PathSource(log), IngestPolicy(format_name="vllm-log"))
    # a server start and no load held: nothing to store, said without a traceback
    assert result.status == "failed" and result.problems
    assert content(used) == before
