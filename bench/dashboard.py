"""`python -m bench.dashboard`: every dashboard page's render time on a large database (2,000 checkpoints,
40,000 benchmarks with predictions and gaps, a run with a million training-metric points), cold and warm."""

import argparse
import logging
import random
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import insert, select

from bench import data
from bench.data import REPO, fresh_db
from bench.measure import median_of
from specdash.db.engine import make_engine, transaction
from specdash.db.models import Alert, AlertEvent, Benchmark, MetricKey, MetricPoint
from specdash.db.refresh import refresh

# Refresh a few checkpoints at a time: each call then only compares against those checkpoints' predictions.
REFRESH_CHECKPOINTS = 50
INSERT_ROWS = 50_000


def log(message: str) -> None:
    print(f"[bench.dashboard {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def add_training_curves(engine, run_id: int, steps: int) -> int:
    """The bench training log's metrics for one run, logged every 50 steps: steps * 20 points."""
    rows = data.metric_rows(steps)
    # metric_rows numbers the keys in the order metric_values yields them
    names = list(data.metric_values(0, random.Random(0)))
    with transaction(engine) as session:
        session.execute(insert(MetricKey), [{"id": i, "name": key} for i, key in enumerate(names, start=1)])
        for start in range(0, len(rows), INSERT_ROWS):
            session.execute(
                insert(MetricPoint),
                [
                    {"run_id": run_id, "key_id": key_id, "step": step, "value": value}
                    for _, key_id, step, value in rows[start : start + INSERT_ROWS]
                ],
            )
    return len(rows)


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


def build(folder: Path, checkpoints: int, benchmarks: int, curve_steps: int) -> str:
    url = fresh_db(folder, "dashboard.db")
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


def render_seconds(url: str, page: str) -> float:
    """One full AppTest run of the page in a new session: what a user waits for after clicking it."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=300)
    for name in list(logging.root.manager.loggerDict):  # streamlit sets its loggers up on import
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)
    at.run()
    at.switch_page(page)
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"{page}: {at.exception[0].message}")
    return elapsed


def page_times(url: str, repeat: int) -> dict[str, tuple[float, float]]:
    """Per page: the first render in this process (empty query cache) and the median warm render."""
    import os

    os.environ["SPECDASH_DB_URL"] = url
    pages = sorted(
        p.relative_to(REPO / "app").as_posix()
        for p in (REPO / "app" / "views").glob("*.py")
        if p.name != "__init__.py"
    )
    times = {}
    for page in pages:
        cold = render_seconds(url, page)
        warm, _ = median_of(repeat, lambda page=page: render_seconds(url, page))
        times[page] = (cold, warm)
        log(f"{page}: first {cold:.2f} s, warm {warm:.2f} s")
    return times


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.dashboard", description=__doc__)
    parser.add_argument("--checkpoints", type=int, default=2_000)
    parser.add_argument("--benchmarks", type=int, default=40_000)
    parser.add_argument(
        "--curve-steps", type=int, default=50_000, help="logged steps of run 1 (x20 metric points)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="warm renders of each page (median)")
    parser.add_argument("--db", help="reuse this database URL instead of building one")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="specdash-bench-dashboard-") as folder:
        url = args.db or build(Path(folder), args.checkpoints, args.benchmarks, args.curve_steps)
        times = page_times(url, args.repeat)
    print(f"{'page':<24} {'first':>7} {'warm':>7}   (warm: median of {args.repeat}; target <= 2 s)")
    for page, (cold, warm) in times.items():
        print(f"{page:<24} {cold:6.2f}s {warm:6.2f}s  {'ok' if warm <= 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
