"""Following growing files in-process: incremental lines, restart at the stored offset, truncation, rotation,
an over-long line, a server log ingested whole when it settles, and a directory watched for new files."""

import json
import os
from pathlib import Path

import pytest
from sqlalchemy import func, select

from specdash.db.engine import reading
from specdash.db.live_models import FollowedFile
from specdash.db.models import Benchmark, MetricPoint, Run
from specdash.ingest.follow import Follower
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.conftest import FIXTURES
from tests.live_support import ARGS, KEYS, poll_once, step_line


def points(engine) -> int:
    with reading(engine) as session:
        return session.scalar(select(func.count()).select_from(MetricPoint))


def followed(engine) -> FollowedFile:
    with reading(engine) as session:
        return session.scalar(select(FollowedFile))


@pytest.fixture(autouse=True)
def _followers_closed(monkeypatch):
    """Every Follower a test makes is closed at its end, as `specdash ingest --follow` closes its own."""
    made = []
    init = Follower.__init__

    def recording_init(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(Follower, "__init__", recording_init)
    yield
    for follower in made:
        follower.close()


@pytest.fixture
def followers():
    """Followers made by a test, closed when it ends: Follower(...) -> follow(...)."""
    made = []

    def make(*args, **options) -> Follower:
        made.append(Follower(*args, **options))
        return made[-1]

    yield make
    for follower in made:
        follower.close()


@pytest.fixture
def log(tmp_path) -> Path:
    path = tmp_path / "train.log"
    path.write_text(ARGS)
    return path


def test_lines_are_read_as_they_arrive_and_a_partial_line_waits(engine, log, followers):
    follower = followers(engine, [str(log)])
    follower.poll()
    with log.open("a") as out:
        out.write(step_line(50) + step_line(100) + step_line(150)[:40])  # the third line is being written
    [event] = follower.poll()
    assert event.lines == 2 and event.metric_points == 2 * KEYS
    assert points(engine) == 2 * KEYS
    with log.open("a") as out:
        out.write(step_line(150)[40:])
    [event] = follower.poll()
    assert event.lines == 1 and points(engine) == 3 * KEYS
    assert follower.poll() == []  # nothing new: nothing done
    row = followed(engine)
    assert row.offset_bytes == log.stat().st_size and row.lines == 4 + 3
    with reading(engine) as session:
        run = session.scalar(select(Run))
    assert (run.name, run.ttt_length, run.target_model) == ("k25-ttt3", 3, "Kimi-K2.5")


def test_a_new_follower_resumes_at_the_stored_offset(engine, log, followers):
    with log.open("a") as out:
        out.write(step_line(50) + step_line(100))
    poll_once(engine, [str(log)])
    with log.open("a") as out:
        out.write(step_line(150))
    restarted = followers(engine, [str(log)])
    [event] = restarted.poll()
    assert event.lines == 1  # only the new line: the run name and args came back from the store
    assert points(engine) == 3 * KEYS
    with reading(engine) as session:
        assert session.scalars(select(Run.name)).all() == ["k25-ttt3"]


def test_truncation_reads_the_file_again_from_the_start(engine, log, followers):
    with log.open("a") as out:
        out.write(step_line(50) + step_line(100))
    follower = followers(engine, [str(log)])
    follower.poll()
    log.write_text(step_line(200))  # truncated and rewritten (copytruncate)
    [event] = follower.poll()
    assert "truncated: reading it again from the start" in event.notes
    assert event.lines == 1 and points(engine) == 3 * KEYS
    with reading(engine) as session:  # the run carried on: same run, not a file-named one
        assert session.scalars(select(Run.name)).all() == ["k25-ttt3"]


def test_rotation_finishes_the_old_file_then_reads_the_new_one(engine, log, followers):
    with log.open("a") as out:
        out.write(step_line(50))
    follower = followers(engine, [str(log)])
    follower.poll()
    with log.open("a") as out:
        out.write(step_line(100))  # written just before rotation, not yet read
    os.rename(log, log.with_suffix(".log.1"))
    log.write_text(step_line(150))
    events = follower.poll()
    assert any("rotated: reading the new file from its start" in e.notes for e in events)
    assert points(engine) == 3 * KEYS
    row = followed(engine)
    assert row.inode == log.stat().st_ino and row.offset_bytes == log.stat().st_size


def test_a_line_longer_than_a_chunk_is_skipped_with_a_problem(engine, log, followers):
    follower = followers(engine, [str(log)], max_chunk_bytes=256)
    follower.poll()
    with log.open("a") as out:
        out.write("x" * 1000 + "\n" + step_line(50))
    events = follower.poll()
    problems = [p for e in events for p in e.problems]
    assert len(problems) == 1 and problems[0].line == 5
    assert "line of 1,001 bytes is over the size cap" in problems[0].message
    assert points(engine) == KEYS


def test_server_log_is_ingested_when_it_settles_and_a_longer_version_supersedes(engine, tmp_path, followers):
    lines = (FIXTURES / "sglang" / "server_0.5.9.log").read_text().splitlines(keepends=True)
    decode = [i for i, line in enumerate(lines) if "Decode batch" in line]
    path = tmp_path / "server.log"
    path.write_text("".join(lines[: decode[len(decode) // 2]]))
    deployment = {"name": "Kimi-K2.5, TP8, sglang", "baseline_tps": 60.0}
    assert ingest(
        engine, UploadSource("d.json", json.dumps({"specdash": 1, "deployments": [deployment]}).encode())
    ).ok
    follower = followers(engine, [str(path)], settle_seconds=0.0)
    assert follower.poll() == []  # first look: not known to be settled yet
    [event] = follower.poll()
    assert event.result.status == "loaded"
    path.write_text("".join(lines))
    follower.poll()
    [event] = follower.poll()
    assert event.result.status == "loaded"
    with reading(engine) as session:
        benches = session.execute(
            select(Benchmark.id, Benchmark.superseded_by_id).order_by(Benchmark.id)
        ).all()
    assert len(benches) == 2
    first, second = benches
    assert first.superseded_by_id == second.id and second.superseded_by_id is None
    assert follower.poll() == []  # unchanged since: nothing again


def test_watched_directory_picks_up_new_files(engine, tmp_path, followers):
    root = tmp_path / "logs"
    root.mkdir()

    def discover():
        return sorted(str(p) for p in root.iterdir() if p.suffix == ".log")

    follower = followers(engine, discover=discover)
    assert follower.poll() == []
    (root / "train.log").write_text(ARGS + step_line(50))
    [event] = follower.poll()
    assert event.lines == 5 and points(engine) == KEYS


def test_two_followers_of_one_file_store_each_line_once(engine, log, followers):
    first, second = followers(engine, [str(log)]), followers(engine, [str(log)])
    first.poll()
    second.poll()
    with log.open("a") as out:
        out.write(step_line(50) + step_line(100))
    first.poll()
    [event] = second.poll()  # it had the old offset: it gives way and reads on from the stored one
    assert "another follower read these lines first; resuming after it" in event.notes
    with log.open("a") as out:
        out.write(step_line(150))
    second.poll()
    first.poll()
    assert points(engine) == 3 * KEYS
    assert followed(engine).lines == 4 + 3 and followed(engine).offset_bytes == log.stat().st_size
