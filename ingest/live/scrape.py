"""Scraping a serving engine: each scrape read into the windower, each closed window stored as a `live`
benchmark through the one ingest pipeline (ingest/pipeline.py, a window a Batch source) and judged for an acceptance collapse in
the same transaction; skipped windows and lost scrapes are counted with their reasons."""

import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from specdash.db.acceptance_alerts import LIVE_FORMAT, WindowAcceptance, judge_window
from specdash.db.engine import StoreBusy, lock_timeout_s
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.live.engines import read_engine
from specdash.ingest.live.exposition import ExpositionError, Scrape
from specdash.ingest.live.http import ScrapeFailed, Stopped
from specdash.ingest.live.windows import Windower, WindowOptions, WindowOutcome
from specdash.ingest.pipeline import ingest
from specdash.ingest.problems import Problem
from specdash.ingest.results import IngestResult
from specdash.ingest.sources import Batch

STORE_BUSY = "store busy"  # a window the store could not take within $SPECDASH_LOCK_TIMEOUT
# Called in each window's transaction with the alerts not to post (a collapse's later windows).
InWindow = Callable[[Session, frozenset[int]], None]


def _no_file(*_args: object) -> Iterator[Located | Problem]:
    raise ExpositionError(
        [Problem("live", None, None, "a live window is made by `specdash scrape`", "parse")]
    )


LIVE = Format(
    LIVE_FORMAT, "a window of an engine's Prometheus /metrics (specdash scrape)", lambda h, n: False, _no_file
)


@dataclass(frozen=True)
class StoredWindow:
    """A closed window: its outcome, what storing it did, and what its accept length meant."""

    outcome: WindowOutcome
    result: IngestResult | None = None
    acceptance: WindowAcceptance | None = None

    @property
    def benchmark_id(self) -> int | None:
        ids = self.result.store.benchmark_ids if self.result and self.result.store else []
        return ids[0] if ids else None


@dataclass
class ScrapeSummary:
    scrapes: int = 0
    lost: Counter = field(default_factory=Counter)  # scrapes not used, by reason
    stored: int = 0
    duplicates: int = 0
    skipped: Counter = field(default_factory=Counter)  # windows not stored, by reason
    collapses: int = 0
    recoveries: int = 0

    def add(self, window: StoredWindow) -> None:
        outcome = window.outcome
        if outcome.skipped:
            self.skipped[outcome.skipped] += 1
        elif outcome.problems or (window.result is not None and not window.result.ok):
            self.skipped["invalid record"] += 1
        elif window.benchmark_id is None:
            self.duplicates += 1
        else:
            self.stored += 1
        if window.acceptance is not None:
            self.collapses += window.acceptance.check.is_alert
            self.recoveries += window.acceptance.check.change == "recovered"

    def text(self) -> str:
        parts = [f"{self.scrapes} scrape(s)", f"{self.stored} window(s) stored"]
        if self.duplicates:
            parts.append(f"{self.duplicates} already stored")
        parts += [f"{n} skipped: {why}" for why, n in sorted(self.skipped.items())]
        parts += [f"{n} scrape(s) lost: {why}" for why, n in sorted(self.lost.items())]
        parts.append(f"{self.collapses} collapse(s), {self.recoveries} recovery(ies)")
        return "; ".join(parts)


def store_window(engine: Engine, outcome: WindowOutcome, in_window: InWindow | None = None) -> StoredWindow:
    """Store a window's benchmark (a skipped or invalid window stores nothing) and judge its acceptance."""
    if outcome.record is None:
        return StoredWindow(outcome)
    judged: list[WindowAcceptance] = []

    def judged_in(session: Session, result: IngestResult) -> None:
        ids = result.store.benchmark_ids if result.store else []
        acceptance = judge_window(session, ids[0]) if ids else None
        if acceptance is not None:
            judged.append(acceptance)
        still = acceptance is not None and acceptance.check.change == "still collapsed"
        if in_window is not None:
            in_window(session, frozenset(ids) if still else frozenset())

    name = str(outcome.record.raw["source"]) if outcome.record.raw else "live"
    # a window's benchmark stored before changes nothing: its records are already there
    result = ingest(engine, Batch(name, LIVE, [Located(None, outcome.record)], kept=judged_in))
    return StoredWindow(outcome, result, judged[0] if judged else None)


class Scraper:
    """Scrapes in, stored windows out; the summary counts everything. A window the store is too busy to
    take (another writer holds the write lock) is kept and tried again at the next scrape, until it has
    waited `busy_seconds`; windows closed meanwhile queue behind it, in order."""

    def __init__(
        self,
        engine: Engine,
        options: WindowOptions,
        in_window: InWindow | None = None,
        busy_seconds: float | None = None,
    ):
        self.engine, self.options, self.in_window = engine, options, in_window
        self.windower = Windower(options)
        self.summary = ScrapeSummary()
        self.busy_seconds = lock_timeout_s() if busy_seconds is None else busy_seconds
        self.waiting: deque[tuple[WindowOutcome, float]] = deque()  # (window, monotonic time it closed)

    def add(self, scrape: Scrape) -> StoredWindow | None:
        """One scrape; a malformed one (ExpositionError) is raised before anything of it is used."""
        windows = self.add_all(scrape)
        return windows[-1] if windows else None

    def add_all(self, scrape: Scrape) -> list[StoredWindow]:
        """One scrape, and every window stored on its account (windows the store was busy for first)."""
        reading = read_engine(scrape)
        self.summary.scrapes += 1
        outcome = self.windower.add(reading)
        if outcome is not None:
            self.waiting.append((outcome, time.monotonic()))
        return self.store_waiting()

    def lose(self, exc: ScrapeFailed | ExpositionError) -> None:
        """A scrape that could not be used: counted by why, and a cut-short one taints its window."""
        if isinstance(exc, ScrapeFailed):
            self.summary.lost[exc.kind] += 1
            if exc.inconsistent:
                self.windower.taint(f"a scrape was cut short: {exc}")
        else:
            self.summary.lost["malformed"] += 1

    def store_waiting(self) -> list[StoredWindow]:
        stored: list[StoredWindow] = []
        while self.waiting:
            outcome, closed = self.waiting[0]
            try:
                window = store_window(self.engine, outcome, self.in_window)
            except StoreBusy as exc:
                if time.monotonic() - closed < self.busy_seconds:
                    raise WindowWaiting(
                        f"window to {outcome.end:%H:%M:%S} kept for the next try: {exc}"
                    ) from None
                window = StoredWindow(replace(outcome, record=None, skipped=STORE_BUSY, detail=str(exc)))
            self.waiting.popleft()
            self.summary.add(window)
            stored.append(window)
        return stored

    def run(
        self,
        fetch: Callable[[], Scrape],
        every_seconds: float,
        stop: threading.Event,
        on_window: Callable[[StoredWindow], None],
        on_lost: Callable[[str], None],
    ) -> None:
        """Scrape every `every_seconds` (on a fixed cadence) until `stop` is set. Nothing a scrape or the
        store does ends the loop: a lost scrape is counted, a busy store's window tried again."""
        start = time.monotonic()
        tick = 0
        while not stop.is_set():
            for window in self._tick(fetch, on_lost):
                on_window(window)
            # the next tick on the cadence; ticks already past (a slow store) are not made up in a burst
            tick = max(tick + 1, int((time.monotonic() - start) / every_seconds))
            stop.wait(max(0.0, start + tick * every_seconds - time.monotonic()))

    def _tick(self, fetch: Callable[[], Scrape], on_lost: Callable[[str], None]) -> list[StoredWindow]:
        try:
            return self.add_all(fetch())
        except Stopped:
            return []
        except (ScrapeFailed, ExpositionError) as exc:
            self.lose(exc)
            on_lost(str(exc))
        except WindowWaiting as exc:
            on_lost(str(exc))
            return []
        try:
            return self.store_waiting()  # a lost scrape is no reason to keep a waiting window waiting
        except WindowWaiting as exc:
            on_lost(str(exc))
            return []


class WindowWaiting(Exception):
    """The store was busy: the window is kept and tried again at the next scrape."""
