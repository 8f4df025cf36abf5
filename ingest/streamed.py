"""A training log stored as it is read, inside the transaction that stores it (ingest/pipeline.py): its
million points are never pickled to a spool and read back. The write lock is held while the file is parsed, and a problem anywhere rolls back what was already inserted, so a file that fails on
its last line leaves the store as it was, as a spooled file does.

A log that goes back to a step it logged (a resumed run) needs two passes for its later values to win
(ingest/rules/within_file.py Resumes): reading it stops at the first such step, and it is read again
the spooled way."""

from collections.abc import Iterator
from typing import Any

from specdash.ingest.formats.base import Format, Located
from specdash.ingest.problems import Problem
from specdash.ingest.read import Opener, Progress, parse_records
from specdash.ingest.records import MetricRows

MAX_STREAMS = 10_000  # (run, key set) pairs followed for resumes; past it the file is read the spooled way


class StreamedLog:
    """The parser's valid records as they come; the parser's own problems in `problems`, apart from what
    the rules and links find as the records are stored (a spooled file's parse problems refuse it before
    any rule runs: so do they here). `refuse`: once a parse problem is found, nothing more is handed on,
    and the file is read on for its problems only."""

    def __init__(
        self, fmt: Format, name: str, opener: Opener, link: Any, progress: Progress | None, refuse: bool
    ):
        self.problems: list[Problem] = []
        self.count = 0  # valid records handed on
        # the log went back to a step it had logged: no more records are handed on, what was stored is
        # rolled back and the file is read again the spooled way
        self.resumed = False
        self.size_bytes: int | None = None  # once read whole
        self.fmt, self.name, self.refuse = fmt, name, refuse
        self._resumes = fmt.resumes  # the formats the Resumes rule reads twice
        self._items = parse_records(fmt, name, opener, link, progress, self.problems, self._read)

    def _read(self, size: int) -> None:
        self.size_bytes = size

    def records(self) -> Iterator[Located]:
        last: dict[tuple[str, tuple[str, ...]], int] = {}  # (run, key set) -> its last step
        for item in self._items:
            if self.refuse and self.problems:
                continue
            record = item.record
            if self._resumes and isinstance(record, MetricRows):
                for step, keys, _ in record.steps:
                    stream = (record.run, keys)
                    if keys and step <= last.get(stream, -1):
                        self.resumed = True
                        return
                    last[stream] = step
                if len(last) > MAX_STREAMS:
                    self.resumed = True
                    return
            self.count += 1
            yield item

    def unreadable(self) -> list[Problem]:
        """The problems that refuse the file before anything is stored, as a spooled read would say them."""
        if self.problems and (self.refuse or self.count == 0):
            return self.problems
        if self.count == 0 and not self.problems:
            return [Problem(self.name, None, None, "no records found", "parse")]
        return []
