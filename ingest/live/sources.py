"""Where scrapes come from: an engine's `/metrics` over HTTP, or saved `curl` output; and `--once A B`,
two saved scrapes made into one window."""

import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from specdash.ingest.live.engines import read_engine
from specdash.ingest.live.exposition import MAX_SCRAPE_BYTES, ExpositionError, Scrape, parse_scrape
from specdash.ingest.live.http import REDIRECTED, ScrapeFailed, http_get
from specdash.ingest.live.windows import WindowOptions, WindowOutcome, window_outcome
from specdash.ingest.problems import Problem
from specdash.masking import masked_url

TIMEOUT_SECONDS = 5.0
# The deadline of one scrape as a share of the time between scrapes (a scrape never runs into the next).
DEADLINE_SHARE = 0.8
MAX_DEADLINE_SECONDS = 30.0


def scrape_deadline(every_seconds: float) -> float:
    """The default deadline of one scrape (connect, headers and body) for scrapes `every_seconds` apart."""
    return min(MAX_DEADLINE_SECONDS, DEADLINE_SHARE * every_seconds)


def utcnow() -> datetime:
    return datetime.now(UTC)


def fetch_scrape(
    url: str,
    timeout: float = TIMEOUT_SECONDS,
    now: Callable[[], datetime] = utcnow,
    stop: threading.Event | None = None,
    max_bytes: int = MAX_SCRAPE_BYTES,
) -> Scrape:
    """One read of an engine's Prometheus text endpoint, stamped when its answer arrived: `timeout` is the
    deadline of the whole GET, redirects are not followed, and a set `stop` ends it (raises Stopped)."""
    shown = masked_url(url)  # the name the scrape, its messages and its windows' records go by
    try:
        answer = http_get(url, timeout, max_bytes, stop)
    except ScrapeFailed as exc:
        raise ScrapeFailed(f"{shown}: {exc}", exc.kind) from None
    at = now()
    if 300 <= answer.status < 400:
        where = answer.headers.get("location", "nowhere")[:200]
        raise ScrapeFailed(f"{shown}: HTTP {answer.status} redirect to {where}: not followed", REDIRECTED)
    if answer.status != 200:
        raise ScrapeFailed(f"{shown}: HTTP {answer.status} {answer.reason[:80]}")
    return parse_scrape(_decode(answer.body, shown, _charset(answer.headers)), shown, at)


def _charset(headers: dict[str, str]) -> str:
    for part in headers.get("content-type", "").split(";")[1:]:
        key, _, value = part.strip().partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip('"')
    return "utf-8"


def read_saved(path: str | Path, at: datetime | None = None) -> Scrape:
    """A scrape saved to a file (`curl -s URL/metrics > a.prom`), taken when the file was last written
    unless `at` says otherwise."""
    path = Path(path)
    try:
        body = path.read_bytes()
        written = datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
    except OSError as exc:
        raise ExpositionError(
            [Problem(str(path), None, None, f"cannot read: {exc.strerror}", "parse")]
        ) from None
    return parse_scrape(_decode(body, str(path), "utf-8"), str(path), at or written)


def window_from_files(
    first: str | Path, second: str | Path, options: WindowOptions, seconds: float | None = None
) -> WindowOutcome:
    """`--once A B`: the window from scrape A to scrape B. The seconds between them are the files' write
    times apart unless given (a copied file keeps no scrape time)."""
    a = read_saved(first)
    b = read_saved(second, at=None if seconds is None else a.at + timedelta(seconds=seconds))
    if (b.at - a.at).total_seconds() <= 0:
        raise ExpositionError(
            [
                Problem(
                    str(second),
                    None,
                    None,
                    f"written no later than {first}: give the seconds between the two scrapes",
                    "parse",
                )
            ]
        )
    readings = [read_engine(a), read_engine(b)]
    if readings[0].engine != readings[1].engine:
        raise ExpositionError(
            [
                Problem(
                    str(second), None, None, f"a {readings[1].engine} scrape after a {readings[0].engine} one"
                )
            ]
        )
    return window_outcome(readings, options)


def _decode(body: bytes, source: str, charset: str) -> str:
    if len(body) > MAX_SCRAPE_BYTES:
        raise ExpositionError([Problem(source, None, None, f"more than {MAX_SCRAPE_BYTES} bytes", "parse")])
    try:
        return body.decode(charset)
    except UnicodeDecodeError as exc:
        line = body[: exc.start].count(b"\n") + 1
        raise ExpositionError(
            [Problem(source, line, None, f"not {charset} text: {exc.reason}", "parse")]
        ) from None
    except LookupError:
        raise ExpositionError(
            [Problem(source, None, None, f"unknown charset {charset!r}", "parse")]
        ) from None
