"""Real processes on one SQLite file: a kill mid-ingest leaves nothing, concurrent ingests all succeed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import func, select, text

from specdash.db.engine import make_engine, reading
from specdash.db.models import IngestedFile, MetricPoint, Run

KEYS = [f"train/acc_{i}" for i in range(7)] + [f"train/ploss_{i}" for i in range(7)] + [
    "train/loss", "train/lr", "train/grad_norm", "train/epoch", "train/tokens_per_s", "train/acc"]


def write_log(path: Path, steps: int, offset: float = 0.0) -> Path:
    body = ", ".join(f"'{key}': {{v:.6f}}" for key in KEYS)
    with path.open("w") as out:
        for n in range(steps):
            out.write(f"step {n * 50}: {{" + body.format(v=offset + n / steps) + "}\n")
    return path


def specdash(url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "specdash", "--db", url, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def counts(url: str) -> tuple[int, int, int]:
    engine = make_engine(url)
    with reading(engine) as session:
        found = tuple(session.scalar(select(func.count()).select_from(m)) for m in (MetricPoint, Run, IngestedFile))
    engine.dispose()
    return found


def test_a_process_killed_mid_ingest_leaves_no_partial_file(db_url, tmp_path):
    log = write_log(tmp_path / "train.log", 60_000)
    wal = Path(db_url.removeprefix("sqlite:///") + "-wal")
    process = specdash(db_url, "ingest", "--quiet", str(log))
    deadline = time.monotonic() + 60
    # pages spill into the write-ahead log once the transaction outgrows the cache: mid-ingest for sure
    while time.monotonic() < deadline and process.poll() is None and (not wal.exists() or wal.stat().st_size < 4e6):
        time.sleep(0.02)
    assert process.poll() is None, "the ingest finished before it could be killed: make the log bigger"
    os.kill(process.pid, signal.SIGKILL)
    process.communicate()  # reaps it and closes its pipes
    assert process.returncode == -signal.SIGKILL
    assert counts(db_url) == (0, 0, 0)
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


def test_two_ingest_processes_at_once_both_succeed(db_url, tmp_path):
    first = write_log(tmp_path / "run-a.log", 8_000)
    second = write_log(tmp_path / "run-b.log", 8_000, offset=1.0)
    processes = [specdash(db_url, "ingest", "--quiet", str(path)) for path in (first, second, first)]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], outputs
    # the same file in two processes at once: one loads it, the other sees it loaded and skips it
    assert sum("skipped, already ingested" in out for out, _ in outputs) == 1
    assert counts(db_url) == (2 * 8_000 * len(KEYS), 2, 2)
