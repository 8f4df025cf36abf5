"""Where scrapes come from: an engine's `/metrics` over HTTP, or saved `curl` output; and `--once A B`,
two saved scrapes made into one window."""

import os
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from specdash.ingest.live.engines import read_engine
from specdash.ingest.live.exposition import MAX_SCRAPE_BYTES, ExpositionError, Scrape, parse_scrape
from specdash.ingest.live.windows import WindowOptions, WindowOutcome, window_outcome
from specdash.ingest.problems import Problem

TIMEOUT_SECONDS = 5.0


class ScrapeFailed(OSError):
    """The endpoint did not answer with metrics (refused, timed out, not 200): one scrape lost."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def fetch_scrape(url: str, timeout: float = TIMEOUT_SECONDS, now: Callable[[], datetime] = utcnow) -> Scrape:
    """One read of an engine's Prometheus text endpoint, stamped when its answer arrived."""
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read(MAX_SCRAPE_BYTES + 1)
            at = now()
            charset = response.headers.get_content_charset() or "utf-8"
    except urllib.error.HTTPError as exc:
        raise ScrapeFailed(f"{url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ScrapeFailed(f"{url}: {reason}") from None
    return parse_scrape(_decode(body, url, charset), url, at)


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
