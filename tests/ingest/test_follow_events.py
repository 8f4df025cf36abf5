"""A TensorBoard event file followed as it grows (`specdash watch`, `ingest --follow`): the trainer's writer
(tensorboardX's SummaryWriter, whose thread writes and flushes its queue every flush_secs, as torch's does) appends scalars,
and each poll stores what the complete records gained. Loops are bounded; the numbers are the test's own."""

import time

import pytest
from sqlalchemy import select

from specdash.db.engine import reading
from specdash.db.live_models import FollowedFile
from specdash.ingest.follow import Follower, watched_files
from specdash.ingest.trackers import tensorboard as tb
from tests.ingest_support import points

tensorboardX = pytest.importorskip("tensorboardX")

RUN = "qwen3-8b-eagle3-online"


def log(writer, step: int, acc: float) -> None:
    for key, value in {"train/acc_0": acc, "train/acc_1": acc / 2, "train/loss": 4 - acc}.items():
        writer.add_scalar(key, value, global_step=step)
    writer.flush()


def written(log_dir):
    """An event file of two log steps (10 and 20), closed."""
    writer = tensorboardX.SummaryWriter(log_dir=str(log_dir))
    log(writer, 10, 0.25)
    log(writer, 20, 0.5)
    writer.close()
    (event_file,) = tb.event_files(str(log_dir))
    return event_file


def poll_until(follower: Follower, done, polls: int = 200):
    """Poll until done() (the writer's thread writes what it was given within its flush_secs)."""
    events = []
    for _ in range(polls):
        events += follower.poll()
        if done():
            return events
        time.sleep(0.05)
    raise AssertionError(f"not done after {polls} polls: {[e.describe() for e in events]}")


def test_new_scalars_are_picked_up_as_they_are_written(engine, tmp_path):
    runs = tmp_path / RUN / "runs"
    writer = tensorboardX.SummaryWriter(log_dir=str(runs), flush_secs=0.05)
    log(writer, 50, 0.5)
    (event_file,) = tb.event_files(str(runs))
    with Follower(engine, [str(event_file)], settle_seconds=0) as follower:
        events = poll_until(follower, lambda: len(points(engine, RUN)) == 3)
        # the writer's thread may flush the step's three scalars over more than one poll
        assert "record(s)" in events[0].describe() and sum(e.metric_points for e in events) == 3
        log(writer, 100, 0.75)
        poll_until(follower, lambda: len(points(engine, RUN)) == 6)
        got = points(engine, RUN)
        assert got[("train/acc_1", 100)] == 0.375 and got[("train/loss", 50)] == 3.5
        assert follower.poll() == []  # nothing new: nothing read, nothing stored
    writer.close()
    with reading(engine) as session:
        row = session.scalar(select(FollowedFile))
        assert row.offset_bytes == event_file.stat().st_size and row.format == "tensorboard"
    # a follower started afresh resumes at the stored offset: the file's records are not read again
    log_more = tensorboardX.SummaryWriter(log_dir=str(runs), filename_suffix=".resumed", flush_secs=0.05)
    log(log_more, 150, 0.875)
    log_more.close()
    with Follower(engine, discover=lambda: watched_files(tmp_path / RUN)) as follower:
        events = poll_until(follower, lambda: len(points(engine, RUN)) == 9)
        assert sum(e.metric_points for e in events) == 3  # only the new file's


def test_a_record_still_being_written_waits_for_its_end(engine, tmp_path):
    """The followed file gets the writer's bytes in two parts, the cut inside a record: the first poll
    stores the records before it, the next the rest once it is complete."""
    source = written(tmp_path / "written" / "runs")
    data = source.read_bytes()
    followed = tmp_path / "followed" / "runs" / source.name
    followed.parent.mkdir(parents=True)
    cut = len(data) - 10  # inside the last record (train/loss at step 20)
    followed.write_bytes(data[:cut])
    with Follower(engine, [str(followed)]) as follower:
        poll_until(follower, lambda: len(points(engine, "followed")) == 5)
        assert ("train/loss", 20) not in points(engine, "followed")
        with open(followed, "ab") as stream:
            stream.write(data[cut:])
        poll_until(follower, lambda: len(points(engine, "followed")) == 6)
    assert points(engine, "followed")[("train/loss", 20)] == 3.5


def test_a_rewritten_file_is_read_again_from_its_start(engine, tmp_path):
    event_file = written(tmp_path / "r" / "runs")
    whole = event_file.read_bytes()
    with Follower(engine, [str(event_file)]) as follower:
        poll_until(follower, lambda: len(points(engine, "r")) == 6)
        event_file.write_bytes(whole[: len(whole) // 2])  # rewritten, shorter than what was read
        (event,) = follower.poll()
    assert event.notes == ["rewritten: reading it again from the start"]
    assert len(points(engine, "r")) == 6  # keyed by run, key and step: nothing stored twice
