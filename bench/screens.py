"""`python -m bench.screens --scale 10`: the Alerts, Leaderboard and Live pages of a bench store in
headless Chromium, saved as screenshots (docs/img/scale-*.png) to check that they stay legible at that size.

The store is `python -m bench.dashboard`'s (kept in --store and reused, it is slow to build), with a drafter
scraped live for two days (2,880 windows, an hour of collapsed acceptance) added once, through the same
refresh and collapse judging `specdash scrape` uses."""

import argparse
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from sqlalchemy import func, insert, select

from bench import data
from bench.dashboard import kept_store, log, scaled_sizes
from bench.data import REPO
from specdash.answers.refresh import refresh
from specdash.db.acceptance_alerts import LIVE_FORMAT, judge_window
from specdash.db.engine import make_engine, transaction
from specdash.db.models import Benchmark

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
WIDTH = 1400
WAIT_MS = 300_000
LIVE_WINDOWS = 2 * 1440
# (url path, file name, text shown once the page has drawn its content)
PAGES = [
    ("alerts", "alerts", "Investigation"),
    ("leaderboard", "leaderboard", "Select a row to open it"),
    ("live", "live", "Windows"),
]


def add_live_windows(url: str, windows: int) -> None:
    """The scraped drafter's windows, stored once: refreshed (predictions, gaps, verdicts) and then judged
    window by window in storage order, as the scraper judges each one it stores."""
    engine = make_engine(url)
    with transaction(engine) as session:
        stored = session.scalar(
            select(func.count()).select_from(Benchmark).where(Benchmark.source_format == LIVE_FORMAT)
        )
        if stored:
            return
        rows = data.live_window_rows(windows)
        session.execute(insert(Benchmark), rows)
        ids = list(
            session.scalars(
                select(Benchmark.id).where(Benchmark.source_format == LIVE_FORMAT).order_by(Benchmark.id)
            )
        )
        refresh(session, ids)
        for benchmark_id in ids:
            judge_window(session, benchmark_id)
    engine.dispose()
    log(f"{windows:,} live windows stored and judged")


def serve(url: str, port: int, log_path: Path) -> subprocess.Popen:
    with log_path.open("w") as out:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "specdash",
                "--db",
                url,
                "serve",
                "--port",
                str(port),
                "--host",
                "127.0.0.1",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"specdash serve exited:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1):
                return server
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"specdash serve did not answer:\n{log_path.read_text()}")


def settle(page) -> None:
    page.wait_for_function("!document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=WAIT_MS)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(800)


def screenshots(base: str, out: Path, prefix: str) -> dict[str, float]:
    """Each page opened in a new tab, drawn, then saved whole; returns the seconds each took to draw."""
    from playwright.sync_api import sync_playwright

    seconds = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        for path, name, ready in PAGES:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            start = time.perf_counter()
            page.goto(f"{base}/{path}")
            page.get_by_text(ready, exact=False).first.wait_for(timeout=WAIT_MS)
            settle(page)
            seconds[name] = time.perf_counter() - start
            errors = page.locator('[data-testid="stException"]')
            if errors.count():
                raise RuntimeError(f"{name}: {errors.first.inner_text()}")
            bottom = page.evaluate(
                "document.querySelector('[data-testid=stMainBlockContainer]').getBoundingClientRect().bottom"
            )
            page.set_viewport_size({"width": WIDTH, "height": int(bottom) + 40})
            page.wait_for_timeout(1000)  # Plotly redraws at the new size
            target = out / f"{prefix}-{name}.png"
            page.screenshot(path=str(target), timeout=WAIT_MS)
            log(f"{target}: drawn in {seconds[name]:.1f} s")
            page.close()
        browser.close()
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.screens", description=__doc__)
    parser.add_argument("--scale", type=float, default=10.0, help="sizes as `python -m bench --scale F`")
    parser.add_argument("--store", type=Path, help="the bench database file (default: one per scale in /tmp)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img", help="folder of the screenshots")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        parser.error(f"{CHROMIUM} is missing: apt-get install -y chromium")
    store = args.store or Path(f"/tmp/specdash-bench-scale{args.scale:g}.db")
    url = kept_store(store, *scaled_sizes(args.scale))
    add_live_windows(url, LIVE_WINDOWS)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = store.with_name(store.name + ".serve.log")
    server = serve(url, args.port, log_path)
    try:
        seconds = screenshots(f"http://127.0.0.1:{args.port}", args.out, f"scale-{args.scale:g}")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    for name, s in seconds.items():
        print(f"{name:<12} drawn in {s:5.1f} s (first visit, wall)")


if __name__ == "__main__":
    main()
