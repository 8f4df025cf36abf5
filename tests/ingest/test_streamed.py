"""A training log stored as it is read (ingest/streamed.py): a failure anywhere leaves the store as it was,
re-reading it changes nothing, a resumed log is read again the spooled way, and the points stored are
the ones the spooled path stored."""

import ast
import random

import pytest

from specdash.ingest.formats import specforge_log
from specdash.ingest.links import LinkOptions
from specdash.ingest.metric_points import FLUSH_ROWS
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnInvalid
from specdash.ingest.sources import UploadSource
from tests.ingest_support import content, points

KEYS = [f"train/acc_{i}" for i in range(7)] + [f"train/ploss_{i}" for i in range(7)] + ["train/loss"]
RUN = LinkOptions(run="r9")


def log_lines(steps: int, seed: int = 3) -> list[str]:
    rng = random.Random(seed)
    return [f"step {s}: {dict((k, rng.random()) for k in KEYS)!r}\n" for s in range(0, 10 * steps, 10)]


@pytest.fixture
def used(engine):
    """A store holding a run's earlier points: a failed log of the same run must leave them as they were."""
    result = ingest(
        engine, UploadSource("first.log", "".join(log_lines(100, seed=1)).encode()), IngestPolicy(link=RUN)
    )
    assert result.status == "loaded" and result.store.metric_points == 100 * len(KEYS)
    return engine


def test_a_log_failing_on_its_last_line_leaves_the_store_as_it_was(used):
    lines = log_lines(40000)  # 600,000 points: more than a flush is inserted before the bad line is read
    assert 40000 * len(KEYS) > FLUSH_ROWS
    lines.append("step 400000: {'train/loss': inf}\n")
    before = content(used)
    result = ingest(used, UploadSource("train.log", "".join(lines).encode()), IngestPolicy(link=RUN))
    assert result.status == "failed" and result.store is None
    assert [str(p) for p in result.problems] == [
        "train.log:40001: train/loss: must be a finite number, not inf"
    ]
    assert content(used) == before


def test_every_parse_problem_is_said_and_only_those(used):
    lines = log_lines(50)
    lines[3] = "step 30: {'train/loss': nan}\n"
    lines[40] = "step 400: {'train/loss': tensor(1.0)}\n"
    before = content(used)
    result = ingest(used, UploadSource("train.log", "".join(lines).encode()), IngestPolicy(link=RUN))
    assert [str(p) for p in result.problems] == [
        "train.log:4: train/loss: must be a finite number, not nan",
        "train.log:41: metrics are not a dict of names to numbers",
    ]
    assert result.status == "failed" and content(used) == before
    other = LinkOptions(run="r10")
    kept = ingest(
        used,
        UploadSource("train.log", "".join(lines).encode()),
        IngestPolicy(link=other, on_invalid=OnInvalid.SKIP),
    )
    assert kept.status == "loaded" and [str(p) for p in kept.problems] == [str(p) for p in result.problems]
    assert kept.store.metric_points == 48 * len(KEYS)  # the 48 good steps
    assert {step for _, step in points(used, "r10")} == set(range(0, 500, 10)) - {30, 400}


def test_re_reading_a_log_changes_nothing(used):
    data = "".join(log_lines(3000)).encode()
    first = ingest(used, UploadSource("train.log", data), IngestPolicy(link=RUN))
    assert first.status == "loaded" and first.store.metric_points == 2900 * len(
        KEYS
    )  # 100 steps stored already
    before = content(used)
    assert ingest(used, UploadSource("train.log", data), IngestPolicy(link=RUN)).status == "skipped"
    # the same points under another digest: read again, every point kept as stored
    again = ingest(used, UploadSource("copy.log", data + b"# copied\n"), IngestPolicy(link=RUN))
    assert again.status == "loaded" and again.store.metric_points == 0
    assert again.store.points_kept == 3000 * len(KEYS)
    after = content(used)
    assert after["metric_point"] == before["metric_point"] and after["metric_key"] == before["metric_key"]


def test_an_empty_log_is_no_records(engine):
    data = "output_dir \u00b7\u00b7\u00b7\u00b7 /out/run7\n".encode()  # the args block alone: no metrics
    result = ingest(
        engine, UploadSource("train.log", data), IngestPolicy(format_name="specforge-log", link=RUN)
    )
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == ["train.log: no records found"]


def test_a_point_logged_by_two_key_sets_keeps_the_first_offered(engine):
    # no resume (each key set's steps go forward): both offers reach the store, and the first one wins
    log = (
        "step 1: {'train/acc_0': 1.0, 'train/loss': 2.0}\n"
        "step 1: {'train/acc_0': 9.0}\n"
        "step 2: {'train/acc_0': 3.0}\n"
        "step 2: {'train/acc_0': 4.0, 'train/loss': 5.0}\n"
    )
    result = ingest(engine, UploadSource("train.log", log.encode()), IngestPolicy(link=RUN))
    assert result.status == "loaded" and result.store.metric_points == 4
    assert points(engine, "r9") == {
        ("train/acc_0", 1): 1.0,
        ("train/loss", 1): 2.0,
        ("train/acc_0", 2): 3.0,
        ("train/loss", 2): 5.0,
    }


def test_a_resumed_log_read_the_spooled_way_keeps_the_later_values(used):
    lines = log_lines(4000)
    resumed = log_lines(4000, seed=8)[3000:]  # back to step 30,000 after step 39,990, other values
    result = ingest(
        used, UploadSource("train.log", "".join(lines + resumed).encode()), IngestPolicy(link=RUN)
    )
    assert result.status == "loaded", [str(p) for p in result.problems]
    assert "resumed at step 30000, " in result.message
    stored = points(used, "r9")
    later = ast.literal_eval(resumed[0].split(": ", 1)[1])
    assert stored[("train/loss", 30000)] == later["train/loss"]
    assert len(stored) == 4000 * len(KEYS)


@pytest.mark.parametrize(
    "text",
    [
        "{'train/acc_0': 0.5, 'train/loss': 2.0}",
        "{'train/acc_0': 0.5, 'train/loss': 1e-3}",
        "{'train/acc_0': -inf, 'train/loss': nan}",
        "{'train/acc_0': 'x', 'train/loss': 2.0}",
        "{'train/acc_0': 0.5, 'train/loss': [1.0, 2.0]}",
        "{'train/acc_0': 0.5, 'train/loss': 2.0}}",
        "{'train/acc_0': 0.5,'train/loss': 2.0}",
        "{'train/acc_0':  0.5, 'train/loss': 1_0}",
        "{'train/acc_0': True, 'train/loss': 2.0}",
        "{'train/acc_0': 0.5, 'train/loss': 2.0, 'x': 1}",
        "{'train/acc_0': 0.5}",
    ],
)
def test_a_key_set_read_by_its_pattern_reads_as_the_split_does(text):
    """Once a key set is known, a line is read by one match of its pattern: the same names and numbers
    (or the same refusal) as splitting the line."""
    specforge_log._LAST_SHAPE.clear()
    split = specforge_log._pairs(text)
    specforge_log._pairs("{'train/acc_0': 0.25, 'train/loss': 0.75}")  # learn the key set
    assert specforge_log._LAST_SHAPE
    assert repr(specforge_log._pairs(text)) == repr(split)  # nan as nan
