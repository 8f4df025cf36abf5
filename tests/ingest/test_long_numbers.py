"""An integer literal longer than Python converts (its int-string limit, 4300 digits) is a file:line
problem in every format's number parsing (JSON, JSONL, YAML, CSV, regex-read logs), not a traceback."""

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.ingest_support import FIXTURES, SGLANG, SPECFORGE, content, load

BIG = "7" * 5000


@pytest.fixture
def used(engine):
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    return engine


def _mutated(path, old: str) -> bytes:
    """The first number of `old` (a key and its number) made 5,000 digits long."""
    text = path.read_text()
    assert old in text, old
    head = old.rstrip("0123456789.")
    return text.replace(old, head + BIG, 1).encode()


@pytest.mark.parametrize(
    "path,old,expected",
    [
        # a training log's step, read by a regex
        (
            SPECFORGE / "train_console_2026.log",
            "step 10",
            ":1: step: a number of 5000 digits is no training step",
        ),
        # vLLM bench serve JSON (one indented object): the field's own line
        (
            FIXTURES / "vllm" / "bench_serve_0.10.json",
            '"max_concurrency": 1',
            None,
        ),
        # native JSONL: the record's line and its field
        (
            FIXTURES / "native" / "records.jsonl",
            '"decode_tps": 150.0',
            None,
        ),
        # GuideLLM YAML: the scalar's own line
        (FIXTURES / "guidellm" / "sweep_v0.5.4.yaml", "max_seconds: 60", None),
    ],
)
def test_a_five_thousand_digit_integer_is_a_problem_on_its_line(used, path, old, expected):
    data = _mutated(path, old)
    line = next(n for n, text in enumerate(data.decode().splitlines(), 1) if BIG in text)
    before = content(used)
    result = ingest(
        used, UploadSource(path.name, data), IngestPolicy(link=LinkOptions(deployment="1x H100, TP1"))
    )
    assert result.status == "failed"
    texts = [str(p) for p in result.problems]
    if expected is not None:
        assert texts == [f"{path.name}{expected}"]
    else:
        assert any("5000 digits" in t or "more than 4300 digits" in t for t in texts), texts
        assert all(p.line == line for p in result.problems), texts
    assert content(used) == before


def test_a_followed_log_with_a_five_thousand_digit_step_reports_it_and_moves_on(engine, tmp_path):
    from specdash.ingest.follow import Follower
    from tests.live_support import ARGS, step_line

    log = tmp_path / "train.log"
    log.write_text(ARGS + step_line(50) + step_line(100).replace("step 100", f"step {BIG}") + step_line(150))
    follower = Follower(engine, [str(log)])
    try:
        events = follower.poll()
    finally:
        follower.close()
    problems = [str(p) for event in events for p in event.problems]
    line = ARGS.count("\n") + 2
    assert problems == [f"{log}:{line}: step: a number of 5000 digits is no training step"]
    assert sum(event.lines for event in events) == line + 1  # the lines after it are read too


@pytest.mark.parametrize(
    "written,expected",
    [
        # 400 digits: under the int-string limit, past a float's range
        ("9" * 400, ":1: train/acc_0: must be a finite number, not inf"),
        ("(" + "9" * 400 + ")", ":1: train/acc_0: must be a finite number, not inf"),
        ("-" + "9" * 400, ":1: train/acc_0: must be a finite number, not -inf"),
        # literal_eval adds the parts of a complex literal: the sum overflows, the line is no metrics dict
        ("9" * 400 + "+1j", ":1: metrics are not a dict of names to numbers"),
    ],
)
def test_a_400_digit_literal_in_a_specforge_console_line_is_a_problem_on_its_line(used, written, expected):
    data = (
        (SPECFORGE / "train_console_2026.log")
        .read_text()
        .replace("'acc_0': 0.6125", f"'acc_0': {written}", 1)
    )
    before = content(used)
    result = ingest(used, UploadSource("train.log", data.encode()))
    assert result.status == "failed"
    assert f"train.log{expected}" in [str(p) for p in result.problems], [str(p) for p in result.problems]
    assert content(used) == before
