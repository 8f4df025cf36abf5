"""`python -m bench.follow [--steps N]`: `specdash ingest --follow` on a training log as it grows.

Three numbers: the time to catch up with a log already written (lines a second), the peak resident memory
of the follower meanwhile (its own heap bounded by one chunk whatever the log's size; the resident total also
counts SQLite's page cache, up to 64 MB, and the memory-mapped database file, up to 256 MB), and the time from a trainer's
append of one line to the point being stored while the follower polls every 0.5 s."""

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.data import KEYS, LOG_EVERY, fresh_db, metric_values, write_specforge_log
from bench.measure import _high_water_kb, cpu_model

TARGETS = {"follow_peak_rss_mb": 300, "append_to_stored_s": 2.0}


def _anon_kb(pid: int) -> int:
    """Resident memory of the process's own (anonymous) pages: its heap, not the database file it maps."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _stored_lines(url: str) -> int:
    from sqlalchemy import select

    from specdash.db.engine import make_engine, reading
    from specdash.db.live_models import FollowedFile

    engine = make_engine(url)
    with reading(engine) as session:
        lines = session.scalar(select(FollowedFile.lines)) or 0
    engine.dispose()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50_000, help="logged steps already in the file")
    parser.add_argument("--appends", type=int, default=10, help="single-line appends timed afterwards")
    args = parser.parse_args()
    import random

    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        log = tmp / "train.log"
        points = write_specforge_log(log, args.steps)
        url = fresh_db(tmp, "follow.db")
        print(
            f"cpu: {cpu_model()}; log: {args.steps:,} steps, {points:,} points, {log.stat().st_size / 1e6:.0f} MB"
        )
        start = time.perf_counter()
        follower = subprocess.Popen(
            [sys.executable, "-m", "specdash", "--db", url, "ingest", "--follow", str(log), "--poll", "0.5"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        peak_kb = anon_kb = 0
        try:
            while _stored_lines(url) < args.steps:
                peak_kb = max(peak_kb, _high_water_kb(follower.pid))
                anon_kb = max(anon_kb, _anon_kb(follower.pid))
                if follower.poll() is not None:
                    raise RuntimeError("the follower stopped")
                time.sleep(0.05)
            catch_up = time.perf_counter() - start
            rng = random.Random(1)
            latencies = []
            for n in range(args.appends):
                step = (args.steps + n) * LOG_EVERY
                with log.open("a") as out:
                    out.write(f"step {step}: {metric_values(step, rng)!r}\n")
                appended = time.perf_counter()
                while _stored_lines(url) < args.steps + n + 1:
                    time.sleep(0.01)
                latencies.append(time.perf_counter() - appended)
            peak_kb = max(peak_kb, _high_water_kb(follower.pid))
        finally:
            follower.send_signal(signal.SIGINT)
            follower.wait(30)
    results = {
        "catch_up_s": catch_up,
        "catch_up_lines_per_s": args.steps / catch_up,
        "follow_peak_rss_mb": peak_kb / 1024,
        "follow_peak_anon_mb": anon_kb / 1024,
        "append_to_stored_s": sorted(latencies)[len(latencies) // 2],
    }
    failed = False
    for name, value in results.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else ("ok" if value <= target else f"MISSED (target <= {target})")
        failed |= verdict.startswith("MISSED")
        print(f"{name:24} {value:12.2f}  {verdict}")
    print(f"({len(KEYS)} keys a line; append latency: median of {len(latencies)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
