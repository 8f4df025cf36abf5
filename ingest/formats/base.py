"""The interface every input format gives: NAME, HELP, detect() and parse() bundled as a Format, and the
Located records (or Problems) parse() yields. Format modules import it from here; the registry of every
format is the package (ingest/formats/__init__.py)."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from specdash.ingest.problems import Problem
from specdash.ingest.records import AnyRecord, MetricRows


@dataclass(frozen=True)
class Located:
    line: int | None
    record: "AnyRecord | MetricRows"


@dataclass(frozen=True)
class Format:
    name: str
    help: str
    detect: Callable[[str, str], bool]
    parse: Callable[..., Iterator["Located | Problem"]]
    # Logs may hold the odd undecodable byte; structured formats must be valid UTF-8.
    decode_errors: str = "strict"
    # Formats of training metrics: millions of points, written with foreign-key checks off (see db/engine.file_transaction).
    bulk_points: bool = False

    @property
    def is_log(self) -> bool:
        """A server or trainer log (the `*-log` formats), read line by line as the process wrote it."""
        return self.name.endswith("-log")

    @property
    def resumes(self) -> bool:
        """A training log that can go back to a step it logged (a resumed run): the later values win,
        which takes two passes (ingest/rules/within_file.py Resumes)."""
        return self.is_log and self.bulk_points
