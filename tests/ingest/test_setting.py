"""One syntax for a stated speculation setting (ingest/setting.py): SGLang's `EAGLE3/3/1/4`, and the
`EAGLE3 3/1/4` every page writes (specdash.labels.setting_label), which it reads back."""

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specdash.ingest.records import SPECULATION_FIELDS, SPECULATION_UNKNOWN
from specdash.ingest.setting import ALGORITHMS, parse_setting
from specdash.labels import setting_label


def fields(text: str) -> tuple:
    setting = parse_setting(text)
    return tuple(setting.setting_fields().values())


@pytest.mark.parametrize(
    "text,expected",
    [
        ("EAGLE3/3/1/4", ("EAGLE3", 3, 1, 4)),
        ("eagle3/5", ("EAGLE3", 5, 1, 6)),  # left off: a chain, K + 1 tokens verified
        ("EAGLE/4/2", ("EAGLE", 4, 2, 9)),  # a full tree: K * topk + 1
        ("nextn/2/1/3", ("NEXTN", 2, 1, 3)),
        ("MTP", ("MTP", None, None, None)),  # an algorithm alone: steps not stated
        ("unknown", (SPECULATION_UNKNOWN, None, None, None)),
        ("none", (None, None, None, None)),
        ("EAGLE3 3/1/4", ("EAGLE3", 3, 1, 4)),
        ("eagle3 5/-/-", ("EAGLE3", 5, None, None)),  # written '-': unknown, not the default
        ("  mtp   1/1/2 ", ("MTP", 1, 1, 2)),
        ("EAGLE3/5/-/-", ("EAGLE3", 5, None, None)),
        ("DFLASH 1/1/16", ("DFLASH", 1, 1, 16)),  # a block drafter: one step, 16 tokens verified
        ("unknown 3/1/4", (SPECULATION_UNKNOWN, 3, 1, 4)),  # a vLLM log that names no method
        ("no speculation", (None, None, None, None)),
    ],
)
def test_settings_read_as_written(text, expected):
    assert fields(text) == expected


@given(
    algorithm=st.sampled_from(sorted({*ALGORITHMS.values(), SPECULATION_UNKNOWN}) + [None]),
    steps=st.one_of(st.none(), st.integers(1, 64)),
    topk=st.one_of(st.none(), st.integers(1, 64)),
    extra=st.one_of(st.none(), st.integers(0, 900)),
)
def test_a_setting_reads_back_what_setting_label_writes(algorithm, steps, topk, extra):
    tokens = None if extra is None else (steps or 1) + extra  # enough tokens for its steps
    row = {"speculative_algorithm": algorithm, "num_steps": steps, "topk": topk, "num_draft_tokens": tokens}
    if algorithm is None:
        row = dict.fromkeys(SPECULATION_FIELDS)  # a baseline is written without its steps
    assert parse_setting(setting_label(row)).setting_fields() == row


@pytest.mark.parametrize(
    "text,message",
    [
        ("EAGLE3/three", "steps must be a whole number or '-', got 'three'"),
        ("EAGLE3/3/1/2", "2 draft tokens cannot hold 3 draft steps"),
        ("EAGLE3 4/1/2", "2 draft tokens cannot hold 4 draft steps"),
        ("EAGLE3/0", "steps must be between 1 and 64, got 0"),
        ("EAGLE3 0/1/4", "steps must be between 1 and 64, got 0"),
        ("EAGLE3 3/1/x", "draft tokens must be a whole number or '-', got 'x'"),
        ("none/3", "no steps without speculation"),
        ("EAGLE3/3/1/4/9", "at most 4 parts"),
        ("EAGLE3 3/1", "expected ALGORITHM"),  # setting_label's form has all three numbers
        ("EAGLE3 3/1/4 x", "expected ALGORITHM"),
        ("3/1/4", "expected ALGORITHM"),  # no algorithm
        ("", "expected ALGORITHM"),
    ],
)
def test_bad_settings_say_why(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_setting(text)


def test_the_setting_reader_imports_first():
    """Read before any format (a live scrape's --setting): importing it must not pull in the format
    registry, whose GuideLLM reader imports it back."""
    code = "from specdash.ingest.setting import parse_setting; print(parse_setting('EAGLE3 3/1/4').num_steps)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "3"), done.stderr


def test_a_setting_from_a_table_row_with_a_missing_count_reads_a_dash():
    """The bug: a leaderboard entry whose benchmark gave no draft-token count (a nullable integer column,
    pandas' NA) stopped the page with a TypeError."""
    import pandas as pd

    row = pd.DataFrame(
        {"speculative_algorithm": ["EAGLE"], "num_steps": [3], "topk": [1], "num_draft_tokens": [None]}
    ).astype({"num_steps": "Int64", "topk": "Int64", "num_draft_tokens": "Int64"})
    assert row.apply(setting_label, axis=1).tolist() == ["EAGLE 3/1/-"]
