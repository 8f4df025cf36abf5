"""`python -m bench.dashboard`: every dashboard page's render time on a large database (2,000 checkpoints,
40,000 benchmarks with predictions and gaps, a run with a million training-metric points), cold and warm."""

import argparse
import logging
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine, insert, make_url, select

from bench import data, reference
from bench.data import REPO, fresh_db
from specdash.answers.refresh import refresh
from specdash.db.engine import make_engine, transaction
from specdash.db.models import Alert, AlertEvent, Benchmark
from specdash.ingest.metric_points import MetricPointWriter

# Refresh a few checkpoints at a time: each call then only compares against those checkpoints' predictions.
REFRESH_CHECKPOINTS = 50


def log(message: str) -> None:
    print(f"[bench.dashboard {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def add_training_curves(engine, run_id: int, steps: int) -> int:
    """The bench training log's metrics for one run, logged every 50 steps: steps * 20 points, stored by
    the ingest's own writer (their rollups with them)."""
    rng = random.Random(data.SEED)
    with transaction(engine) as session:
        writer = MetricPointWriter(session)
        for n in range(steps):
            values = data.metric_values(n * data.LOG_EVERY, rng)
            writer.add(run_id, [(n * data.LOG_EVERY, tuple(values), list(values.values()))])
        writer.flush()
    return writer.written


def refresh_in_chunks(engine, checkpoints: int) -> None:
    for first in range(1, checkpoints + 1, REFRESH_CHECKPOINTS):
        with transaction(engine) as session:
            ids = list(
                session.scalars(
                    select(Benchmark.id).where(
                        Benchmark.checkpoint_id.between(first, first + REFRESH_CHECKPOINTS - 1)
                    )
                )
            )
            refresh(session, ids)


def add_alert_history(engine, events: int) -> None:
    with transaction(engine) as session:
        alert_ids = list(
            session.scalars(select(Alert.benchmark_id).order_by(Alert.benchmark_id).limit(events))
        )
        session.execute(
            insert(AlertEvent),
            [
                {
                    "benchmark_id": alert_id,
                    "who": "bench",
                    "from_status": "open",
                    "to_status": "investigating",
                    "note": "looking into it",
                }
                for alert_id in alert_ids[:events]
            ],
        )


def build(
    folder: Path, checkpoints: int, benchmarks: int, curve_steps: int, name: str = "dashboard.db"
) -> str:
    url = fresh_db(folder, name)
    engine = make_engine(url)
    start = time.perf_counter()
    sizes = data.populate(engine, checkpoints, benchmarks)
    points = add_training_curves(engine, 1, curve_steps)
    log(f"database: {sizes}, {points:,} metric points on run 1 ({time.perf_counter() - start:.0f} s)")
    start = time.perf_counter()
    refresh_in_chunks(engine, checkpoints)
    add_alert_history(engine, 200)
    log(f"predictions and gaps: {time.perf_counter() - start:.0f} s")
    engine.dispose()
    return url


def scaled_sizes(scale: float) -> tuple[int, int, int]:
    """Checkpoints, benchmarks and run 1's logged steps at `python -m bench --scale F`."""
    return max(20, int(2_000 * scale)), max(200, int(40_000 * scale)), max(10, int(50_000 * scale))


def kept_store(path: Path, checkpoints: int, benchmarks: int, curve_steps: int) -> str:
    """The URL of a bench database kept in `path`: built there the first time (at scale 10 that takes a
    quarter of an hour), reused afterwards. A half-built file (the build interrupted) is built again."""
    done = path.with_name(path.name + ".built")
    if not (path.exists() and done.exists()):
        path.parent.mkdir(parents=True, exist_ok=True)
        build(path.parent, checkpoints, benchmarks, curve_steps, name=path.name)
        done.write_text(f"{checkpoints} {benchmarks} {curve_steps}\n")
    return f"sqlite:///{path}"


def render_seconds(url: str, page: str, statements: list | None = None) -> tuple[float, float]:
    """One full AppTest run of the page opened in a new session: what a user waits for after following a
    link to it, wall and CPU seconds (the app runs in this process); the SQL it sent appended to
    `statements`."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=300)
    for name in list(logging.root.manager.loggerDict):  # streamlit sets its loggers up on import
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)
    # the page opened directly (its link), not after the Overview: a first render caches nothing
    # beforehand that the pages timed before it did not
    at.switch_page(page)
    with reference.recording(Engine) as sent:
        start, cpu = time.perf_counter(), time.process_time()
        at.run()
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    if statements is not None:
        statements += sent
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].message}")
    return elapsed, cpu


@dataclass(frozen=True)
class PageTimes:
    """A page's first render in this process (empty query cache) and its median warm render, wall and
    CPU seconds, and the CPU seconds of the first render's SQL on a bare sqlite3 connection."""

    first_s: float
    warm_s: float
    first_cpu_s: float
    warm_cpu_s: float
    sqlite_cpu_s: float


def page_times(url: str, repeat: int, only: list[str] | None = None) -> dict[str, PageTimes]:
    """Each page's times (`only`: the pages named, as `leaderboard` or `views/leaderboard.py`)."""
    import os

    os.environ["SPECDASH_DB_URL"] = url
    pages = sorted(
        p.relative_to(REPO / "app").as_posix()
        for p in (REPO / "app" / "views").glob("*.py")
        if p.name != "__init__.py" and (not only or p.stem in only or f"views/{p.name}" in only)
    )
    # one untimed render first: the process's own start (Streamlit's set-up, the app's imports) is no page's
    render_seconds(url, "views/upload.py")
    times = {}
    for page in pages:
        statements: list = []
        cold, cold_cpu = render_seconds(url, page, statements)
        renders = [render_seconds(url, page) for _ in range(repeat)]
        warm, warm_cpu = (statistics.median(r[i] for r in renders) for i in (0, 1))
        bare = reference.replay_seconds(make_url(url).database or "", statements) if statements else 0.0
        times[page] = PageTimes(cold, warm, cold_cpu, warm_cpu, bare)
        log(
            f"{page}: first {cold:.2f} s ({cold_cpu:.2f} s CPU; its SQL on bare sqlite3 {bare:.2f} s), "
            f"warm {warm:.2f} s ({warm_cpu:.2f} s CPU)"
        )
    return times


def print_pages(times: dict[str, PageTimes], repeat: int) -> None:
    print(
        f"{'page':<24} {'first':>7} {'CPU':>6} {'sqlite3':>8} {'ratio':>6} {'warm':>7} {'CPU':>6}"
        f"   (warm: median of {repeat}; targets: first <= 2 s, warm <= 1 s)"
    )
    for page, t in times.items():
        ok = t.first_s <= 2 and t.warm_s <= 1
        ratio = t.sqlite_cpu_s / t.first_cpu_s if t.first_cpu_s else 0.0
        print(
            f"{page:<24} {t.first_s:6.2f}s {t.first_cpu_s:5.2f}s {t.sqlite_cpu_s:7.2f}s {ratio:6.2f} "
            f"{t.warm_s:6.2f}s {t.warm_cpu_s:5.2f}s  {'ok' if ok else 'MISSED'}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__)
    parser.add_argument("--checkpoints", type=int, default=2_000)
    parser.add_argument("--benchmarks", type=int, default=40_000)
    parser.add_argument(
        "--curve-steps", type=int, default=50_000, help="logged steps of run 1 (x20 metric points)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="warm renders of each page (median)")
    parser.add_argument(
        "--scale", type=float, help="sizes as `python -m bench --scale F` (overrides the three above)"
    )
    parser.add_argument("--db", help="reuse this database URL instead of building one")
    parser.add_argument("--store", type=Path, help="build the database in this file once, then reuse it")
    parser.add_argument("--pages", help="time only these pages, comma-separated (leaderboard,alerts)")
    args = parser.parse_args(argv)
    if args.scale is not None:
        args.checkpoints, args.benchmarks, args.curve_steps = scaled_sizes(args.scale)
    with tempfile.TemporaryDirectory(prefix="specdash-bench-dashboard-") as folder:
        url = args.db or (
            kept_store(args.store, args.checkpoints, args.benchmarks, args.curve_steps)
            if args.store
            else build(Path(folder), args.checkpoints, args.benchmarks, args.curve_steps)
        )
        times = page_times(url, args.repeat, args.pages.split(",") if args.pages else None)
    print_pages(times, args.repeat)


if __name__ == "__main__":
    main()
