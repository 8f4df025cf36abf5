"""Scraping a serving engine: each scrape read into the windower, each closed window stored as a `live`
benchmark through the one load path (ingest/load.py load_records) and judged for an acceptance collapse in
the same transaction; skipped windows and lost scrapes are counted with their reasons."""

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from specdash.db.acceptance_alerts import LIVE_FORMAT, WindowAcceptance, judge_window
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.live.engines import read_engine
from specdash.ingest.live.exposition import ExpositionError, Scrape
from specdash.ingest.live.sources import ScrapeFailed
from specdash.ingest.live.windows import Windower, WindowOptions, WindowOutcome
from specdash.ingest.load import FileResult, load_records
from specdash.ingest.problems import Problem

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
    result: FileResult | None = None
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

    def after(session: Session, result: FileResult) -> None:
        ids = result.store.benchmark_ids if result.store else []
        acceptance = judge_window(session, ids[0]) if ids else None
        if acceptance is not None:
            judged.append(acceptance)
        still = acceptance is not None and acceptance.check.change == "still collapsed"
        if in_window is not None:
            in_window(session, frozenset(ids) if still else frozenset())

    name = str(outcome.record.raw["source"]) if outcome.record.raw else "live"
    result = load_records(engine, name, LIVE, [Located(None, outcome.record)], after=after)
    return StoredWindow(outcome, result, judged[0] if judged else None)


class Scraper:
    """Scrapes in, stored windows out; the summary counts everything."""

    def __init__(self, engine: Engine, options: WindowOptions, in_window: InWindow | None = None):
        self.engine, self.options, self.in_window = engine, options, in_window
        self.windower = Windower(options)
        self.summary = ScrapeSummary()

    def add(self, scrape: Scrape) -> StoredWindow | None:
        """One scrape; a malformed one (ExpositionError) is raised before anything of it is used."""
        reading = read_engine(scrape)
        self.summary.scrapes += 1
        outcome = self.windower.add(reading)
        if outcome is None:
            return None
        window = store_window(self.engine, outcome, self.in_window)
        self.summary.add(window)
        return window

    def run(
        self,
        fetch: Callable[[], Scrape],
        every_seconds: float,
        stop: threading.Event,
        on_window: Callable[[StoredWindow], None],
        on_lost: Callable[[str], None],
    ) -> None:
        """Scrape every `every_seconds` (on a fixed cadence) until `stop` is set."""
        start = time.monotonic()
        tick = 0
        while not stop.is_set():
            try:
                window = self.add(fetch())
            except ScrapeFailed as exc:
                self.summary.lost["no answer"] += 1
                on_lost(str(exc))
            except ExpositionError as exc:
                self.summary.lost["malformed"] += 1
                on_lost(str(exc))
            else:
                if window is not None:
                    on_window(window)
            # the next tick on the cadence; ticks already past (a slow store) are not made up in a burst
            tick = max(tick + 1, int((time.monotonic() - start) / every_seconds))
            stop.wait(max(0.0, start + tick * every_seconds - time.monotonic()))
