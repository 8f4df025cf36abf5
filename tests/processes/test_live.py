"""The live story end to end, in real processes: a trainer appends SpecForge `step N: {...}` lines for a TTT-3
run whose target is served on a PCIe box while `specdash ingest --follow` runs; the advisory appears, a
local webhook hears of it exactly once, the dashboard shows it, and a follower killed and restarted
loses and repeats nothing."""

import json
import signal
import subprocess
import sys
import time

import pytest
from sqlalchemy import func, select

from specdash.db.engine import make_engine, reading
from specdash.db.live_models import FollowedFile, Notification
from specdash.db.models import MetricPoint
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.app_support import run_page
from tests.live_support import ARGS, DEPLOYMENT, KEYS, step_line, wait_for
from tests.webhook_support import Receiver

pytestmark = pytest.mark.slow

FIRST, SECOND = range(10, 210, 10), range(210, 410, 10)  # steps before and after the follower is killed
WRITER = """
import os, sys, time
path, go, first, second = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
def write(lines):
    for line in lines.split("|"):
        with open(path, "a") as out:
            out.write(line + "\\n")
        time.sleep(0.02)
write(first)
deadline = time.monotonic() + 60
while not os.path.exists(go) and time.monotonic() < deadline:
    time.sleep(0.02)
write(second)
"""


def follower(url: str, log, hook_url: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "specdash",
            "--db",
            url,
            "ingest",
            "--follow",
            str(log),
            "--notify",
            hook_url,
            "--poll",
            "0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.communicate(timeout=10)


def _lines(steps) -> str:
    return "|".join(step_line(s).rstrip("\n") for s in steps)


def test_follow_raises_the_advisory_once_and_survives_a_kill(monkeypatch, db_url, tmp_path):
    engine = make_engine(db_url)
    assert ingest(
        engine, UploadSource("d.json", json.dumps({"specdash": 1, "deployments": [DEPLOYMENT]}).encode())
    ).ok
    log, go = tmp_path / "train.log", tmp_path / "go"
    log.write_text(ARGS)
    header_lines = ARGS.count("\n")
    processes = []

    def count(query):
        with reading(engine) as session:
            return session.scalar(query)

    def advisories():
        from specdash.db.advisories import advisory_rows

        with reading(engine) as session:
            return advisory_rows(session)

    with Receiver() as hook:
        try:
            first = follower(db_url, log, hook.url)
            processes.append(first)
            writer = subprocess.Popen(
                [sys.executable, "-c", WRITER, str(log), str(go), _lines(FIRST), _lines(SECOND)]
            )
            processes.append(writer)
            assert wait_for(lambda: advisories() != []), "no advisory"
            [advisory] = advisories()
            assert advisory["run"] == "k25-ttt3" and advisory["status"] == "open"
            assert advisory["message"].startswith(
                "trained 3 deep; on 8x RTX PRO 6000, TP8, PCIe the best depth for this curve is 7, worth ~14%"
            )
            assert wait_for(lambda: len(hook.delivered) == 1), "no webhook call"
            assert hook.delivered[0]["text"] == f"specdash advisory for run k25-ttt3: {advisory['message']}"

            # the dashboard shows it, on the run's page and the Overview
            at = run_page(monkeypatch, db_url, "views/checkpoints.py")
            assert not at.exception
            assert any("trained 3 deep" in w.value and "k25\\-ttt3" in w.value for w in at.warning)
            at = run_page(monkeypatch, db_url)
            assert any("Open advisories" in s.value for s in at.subheader)

            # killed mid-run: what committed stays, the rest is read by the next follower
            assert wait_for(lambda: count(select(FollowedFile.lines)) == header_lines + len(FIRST))
            first.send_signal(signal.SIGKILL)
            first.wait(10)
            go.touch()
            writer.wait(60)
            second = follower(db_url, log, hook.url)
            processes.append(second)
            total = header_lines + len(FIRST) + len(SECOND)
            assert wait_for(lambda: count(select(FollowedFile.lines)) == total), "restart did not catch up"
            assert count(select(FollowedFile.offset_bytes)) == log.stat().st_size
            assert count(select(func.count()).select_from(MetricPoint)) == (len(FIRST) + len(SECOND)) * KEYS
            assert count(select(func.count(func.distinct(MetricPoint.step)))) == len(FIRST) + len(SECOND)
            time.sleep(0.5)  # a second look for a repeated webhook call
            assert len(hook.bodies) == 1
            assert count(select(func.count()).select_from(Notification)) == 1
            assert count(select(Notification.status)) == "sent"

            # Ctrl-C stops it cleanly
            second.send_signal(signal.SIGINT)
            out, err = second.communicate(timeout=30)
            assert second.returncode == 0, err
            assert "stopped; every line read so far is stored" in err
            assert f"{log}: +" in out
        finally:
            for process in processes:
                stop(process)
            engine.dispose()
    assert all(p.poll() is not None for p in processes)  # no process left behind


def test_watch_follows_files_that_appear_and_stops_on_ctrl_c(db_url, tmp_path):
    root = tmp_path / "logs"
    root.mkdir()
    engine = make_engine(db_url)
    watcher = subprocess.Popen(
        [sys.executable, "-m", "specdash", "--db", db_url, "watch", str(root), "--poll", "0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        (root / "notes.md").write_text("not a log")
        (root / "train.log").write_text(ARGS + step_line(10) + step_line(20))

        def stored():
            with reading(engine) as session:
                return session.scalar(select(func.count()).select_from(MetricPoint))

        assert wait_for(lambda: stored() == 2 * KEYS)
        watcher.send_signal(signal.SIGINT)
        out, err = watcher.communicate(timeout=30)
        assert watcher.returncode == 0, err
        assert "train.log: +6 line(s); 8 metric point(s)" in out and "notes.md" not in out
    finally:
        stop(watcher)
        engine.dispose()
