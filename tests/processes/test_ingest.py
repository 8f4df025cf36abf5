"""Real processes on one SQLite file: a kill mid-ingest leaves nothing, concurrent ingests and a reader all
succeed, a writer waits for the lock with a message and fails cleanly past its limit."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from specdash.db.engine import make_engine, reading
from specdash.db.models import IngestedFile, MetricPoint, Run
from specdash.db.schema import upgrade
from tests.conftest import sqlite_url

pytestmark = pytest.mark.slow

KEYS = (
    [f"train/acc_{i}" for i in range(7)]
    + [f"train/ploss_{i}" for i in range(7)]
    + ["train/loss", "train/lr", "train/grad_norm", "train/epoch", "train/tokens_per_s", "train/acc"]
)


def write_log(path: Path, steps: int, offset: float = 0.0) -> Path:
    body = ", ".join(f"'{key}': {{v:.6f}}" for key in KEYS)
    with path.open("w") as out:
        for n in range(steps):
            out.write(f"step {n * 50}: {{" + body.format(v=offset + n / steps) + "}\n")
    return path


def specdash(url: str, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "specdash", "--db", url, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def counts(url: str) -> tuple[int, int, int]:
    engine = make_engine(url)
    with reading(engine) as session:
        found = tuple(
            session.scalar(select(func.count()).select_from(m)) for m in (MetricPoint, Run, IngestedFile)
        )
    engine.dispose()
    return found


def test_a_process_killed_mid_ingest_leaves_no_partial_file(db_url, tmp_path):
    steps = 60_000
    log = write_log(tmp_path / "train.log", steps)
    wal = Path(db_url.removeprefix("sqlite:///") + "-wal")
    complete = (steps * len(KEYS), 1, 1)
    # pages spill into the write-ahead log once the transaction outgrows the cache: mid-ingest, unless a
    # loaded machine stalls the poll past the commit (then the file is whole, and the next try kills earlier)
    for attempt in range(3):
        if attempt:
            db_url = sqlite_url(tmp_path / f"retry-{attempt}.db")
            wal = Path(db_url.removeprefix("sqlite:///") + "-wal")
            upgrade(make_engine(db_url))
        process = specdash(db_url, "ingest", "--quiet", str(log))
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline
            and process.poll() is None
            and (not wal.exists() or wal.stat().st_size < 4e6)
        ):
            time.sleep(0.02)
        assert process.poll() is None, "the ingest finished before it could be killed: make the log bigger"
        os.kill(process.pid, signal.SIGKILL)
        process.communicate()  # reaps it and closes its pipes
        assert process.returncode == -signal.SIGKILL
        found = counts(db_url)
        assert found in ((0, 0, 0), complete), f"a killed ingest left part of its file: {found}"
        if found == (0, 0, 0):
            break
    assert found == (0, 0, 0), "every kill came after the commit"
    engine = make_engine(db_url)
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA integrity_check")).scalar() == "ok"
    engine.dispose()
    # and the database takes the next file as usual
    small = write_log(tmp_path / "small.log", 10)
    rerun = specdash(db_url, "ingest", "--quiet", str(small))
    _, err = rerun.communicate(timeout=60)
    assert rerun.returncode == 0, err
    assert counts(db_url) == (10 * len(KEYS), 1, 1)


def test_four_ingest_processes_and_a_reader_at_once_all_succeed(db_url, tmp_path):
    logs = [write_log(tmp_path / f"run-{n}.log", 6_000, offset=float(n)) for n in range(3)]
    env = dict(os.environ, SPECDASH_LOCK_TIMEOUT="120")
    processes = [specdash(db_url, "ingest", "--quiet", str(path), env=env) for path in (*logs, logs[0])]
    reader = specdash(db_url, "gaps", "--status", "all", env=env)  # the dashboard's kind of read, meanwhile
    reads = 0
    while any(p.poll() is None for p in processes):
        _, err = reader.communicate(timeout=60)
        assert reader.returncode == 0, err
        reads += 1
        reader = specdash(db_url, "gaps", "--status", "all", env=env)
    _, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0, 0], outputs
    # the same file in two processes at once: one loads it, the other sees it loaded and skips it
    assert sum("skipped, already ingested" in out for out, _ in outputs) == 1
    assert counts(db_url) == (3 * 6_000 * len(KEYS), 3, 3)
    assert reads >= 1


def hold_write_lock(db_url: str) -> sqlite3.Connection:
    """Another writer mid-transaction (in WAL mode, as every specdash connection leaves the file)."""
    holder = sqlite3.connect(db_url.removeprefix("sqlite:///"), isolation_level=None)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_a_writer_waits_for_the_lock_with_a_message_then_fails_cleanly(db_url, tmp_path):
    log = write_log(tmp_path / "train.log", 10)
    holder = hold_write_lock(db_url)
    try:
        started = time.monotonic()
        process = specdash(
            db_url, "ingest", "--quiet", str(log), env=dict(os.environ, SPECDASH_LOCK_TIMEOUT="2")
        )
        out, err = process.communicate(timeout=60)
        waited = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
    assert process.returncode == 1
    assert err == (
        "waiting for another writer to finish (up to 2 s; set SPECDASH_LOCK_TIMEOUT to change)\n"
        "Error: another writer held the database's write lock for more than 2 s; nothing was written. "
        "Try again when it has finished, or wait longer with SPECDASH_LOCK_TIMEOUT=SECONDS\n"
    )
    assert waited >= 2
    assert counts(db_url) == (0, 0, 0)


def test_a_writer_that_waits_goes_on_once_the_lock_is_free(db_url, tmp_path):
    log = write_log(tmp_path / "train.log", 10)
    holder = hold_write_lock(db_url)
    process = specdash(
        db_url, "ingest", "--quiet", str(log), env=dict(os.environ, SPECDASH_LOCK_TIMEOUT="60")
    )
    notice = process.stderr.readline()  # blocks until the writer, done parsing, says it waits
    assert (
        notice == "waiting for another writer to finish (up to 60 s; set SPECDASH_LOCK_TIMEOUT to change)\n"
    )
    assert process.poll() is None
    holder.rollback()
    holder.close()
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert counts(db_url) == (10 * len(KEYS), 1, 1)
