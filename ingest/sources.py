"""Where an ingest's records come from: the Source interface (a name, a digest where it has one, its
records and problems read before the write lock, what it keeps with them in their transaction) and its
kinds: a path (a text file, or a tracker's store or SpecForge folder), an upload's bytes, and a batch of a
stream (a followed log's chunk, an event file's records, a live scrape's window)."""

import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from dataclasses import replace as replace_field
from pathlib import Path
from typing import Protocol

from sqlalchemy.orm import Session

from specdash.ingest.formats.base import Format, Located
from specdash.ingest.policy import IngestPolicy, OnInvalid
from specdash.ingest.problems import SKIPPED, Problem, skipped_note
from specdash.ingest.read import (
    Opener,
    Progress,
    Spool,
    detect_file,
    not_a_file,
    open_regular,
    parse_file,
    path_reader,
    read_store,
    reader_format,
    sha256_of,
    store_digest,
    uploaded_store,
)
from specdash.ingest.results import IngestResult
from specdash.ingest.streamed import StreamedLog
from specdash.ingest.trackers.base import TrackerReader


@dataclass
class Read:
    """A source's records, read and validated and waiting for the write lock, and its problems: a whole
    file (its sha256 and size recorded as an ingested file) or a stream's batch (sha256 None)."""

    name: str
    fmt: Format | None  # None: the source could not be read at all (its problem says why)
    records: Iterable[Located] = ()
    problems: list[Problem] = field(default_factory=list)
    sha256: str | None = None
    size_bytes: int = 0
    count: int | None = None  # valid records read; None while a log stored as it is read is still read
    streamed: StreamedLog | None = None  # a training log stored as it is read (ingest/streamed.py)
    skipped: str | None = None  # the parts that held nothing to measure (problems.skipped_note)


class Source(Protocol):
    """What an ingest reads: a name, a digest where it has one (what says it was ingested already), its
    records with their problems, and what it keeps with them in the same transaction."""

    name: str

    def digest(self, policy: IngestPolicy) -> str | None: ...

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        """Its records into `spool`; `stream`: a training log may hand them on as it is read instead."""
        ...

    def keep(self, session: Session, result: IngestResult) -> None:
        """Called in the records' transaction once they are stored (a followed file's new offset)."""
        ...


def _no_records(read: Read) -> Read:
    """A file of no records refused; parts of a file that held nothing to measure said beside what it
    stores, not as its problems (they refuse only a file that has nothing else)."""
    if read.count == 0:
        if not read.problems:
            read.problems.append(Problem(read.name, None, None, "no records found", "parse"))
        return read
    read.skipped = skipped_note(read.problems)
    read.problems = [p for p in read.problems if p.kind != SKIPPED]
    return read


class TextSource:
    """A file a text format reads, opened by `opener` (from disk or from an upload's bytes)."""

    def __init__(self, name: str, opener: Opener, progress: Progress | None = None):
        self.name, self.opener, self.progress = name, opener, progress
        self._digest: str | None = None

    def digest(self, policy: IngestPolicy) -> str | None:
        if self._digest is None:
            self._digest = sha256_of(self.opener)
        return self._digest

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        digest = self.digest(policy)
        fmt = detect_file(self.opener, self.name, policy.format_name)
        if isinstance(fmt, Problem):
            return Read(self.name, None, problems=[fmt], sha256=digest)
        link = policy.link
        if stream and fmt.bulk_points:
            refuse = policy.on_invalid is OnInvalid.REFUSE
            log = StreamedLog(fmt, self.name, self.opener, link, self.progress, refuse)
            return Read(self.name, fmt, log.records(), sha256=digest, streamed=log)
        problems: list[Problem] = []
        size = parse_file(fmt, self.name, self.opener, link, self.progress, problems, spool.add)
        return _no_records(Read(self.name, fmt, spool, problems, digest, size, spool.count))

    def keep(self, session: Session, result: IngestResult) -> None:
        pass


class StoreSource:
    """A path a tracker reader reads (a tracker's store, a SpecForge config or output folder), its
    problems named by `label` when it has one (an upload's own name)."""

    def __init__(self, path: str, reader: TrackerReader, label: str | None = None):
        self.path, self.reader, self.label = path, reader, label
        self.name = label or path

    def digest(self, policy: IngestPolicy) -> str | None:
        return store_digest(self.reader, self.path)[0]

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        digest, size = store_digest(self.reader, self.path)
        problems: list[Problem] = []
        read_store(self.reader, self.path, policy.link, problems, spool.add)
        if self.label is not None:
            label = self.label
            problems = [replace_field(p, path=label) if p.path.startswith(self.path) else p for p in problems]
        fmt = reader_format(self.reader)
        return _no_records(Read(self.name, fmt, spool, problems, digest, size, spool.count))

    def keep(self, session: Session, result: IngestResult) -> None:
        pass


class Unreadable:
    """A path nothing reads (missing, a FIFO, a folder no reader knows, a --format it does not fit)."""

    def __init__(self, name: str, problem: Problem):
        self.name, self.problem = name, problem

    def digest(self, policy: IngestPolicy) -> str | None:
        return None

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        return Read(self.name, None, problems=[self.problem])

    def keep(self, session: Session, result: IngestResult) -> None:
        pass


class PathSource:
    """A path on disk: a text file, or what a tracker reader reads (ingest/read.py path_reader); which
    one the policy's forced format can decide."""

    def __init__(self, path: str | Path, progress: Progress | None = None):
        self.path, self.progress = Path(path), progress
        self.name = str(path)
        self._chosen: TextSource | StoreSource | Unreadable | None = None

    def _source(self, policy: IngestPolicy) -> TextSource | StoreSource | Unreadable:
        if self._chosen is None:
            self._chosen = self._choose(policy.format_name)
        return self._chosen

    def _choose(self, format_name: str | None) -> TextSource | StoreSource | Unreadable:
        reader = path_reader(self.path, format_name)
        if isinstance(reader, Problem):
            return Unreadable(self.name, reader)
        if reader is not None:
            return StoreSource(self.name, reader)
        why = not_a_file(self.path)
        if why is not None:
            return Unreadable(self.name, Problem(self.name, None, None, why, "parse"))
        return TextSource(self.name, lambda: open_regular(self.path), self.progress)

    def digest(self, policy: IngestPolicy) -> str | None:
        source = self._source(policy)
        try:
            return source.digest(policy)
        except OSError as exc:
            self._chosen = self._cannot_read(exc)
            return None

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        source = self._source(policy)
        try:
            return source.read(policy, spool, stream)
        except OSError as exc:
            return Read(self.name, None, problems=[self._cannot_read(exc).problem])

    def _cannot_read(self, exc: OSError) -> Unreadable:
        if exc.filename is None or Path(exc.filename) != self.path:
            raise exc  # the store's or the spool's fault, not the file's
        return Unreadable(self.name, Problem(self.name, None, None, f"cannot read: {exc.strerror}", "parse"))

    def keep(self, session: Session, result: IngestResult) -> None:
        pass


class UploadSource:
    """An uploaded file's bytes; a tracker's binary file (an event file, an mlflow.db) is written to a
    temporary folder under its own name and read as that path is (ingest/read.py uploaded_store)."""

    def __init__(self, name: str, data: bytes):
        self.name, self.data = name, data
        self.text = TextSource(name, lambda: io.BytesIO(data))

    def _store(self, path: Path | None, policy: IngestPolicy) -> StoreSource | None:
        reader = path_reader(path, policy.format_name) if path is not None else None
        return StoreSource(str(path), reader, self.name) if isinstance(reader, TrackerReader) else None

    def digest(self, policy: IngestPolicy) -> str | None:
        with uploaded_store(self.name, self.data) as path:
            store = self._store(path, policy)
            if store is not None:
                return store.digest(policy)
        return self.text.digest(policy)

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        with uploaded_store(self.name, self.data) as path:  # read whole into the spool while it exists
            store = self._store(path, policy)
            if store is not None:
                return store.read(policy, spool, stream)
        return self.text.read(policy, spool, stream)

    def keep(self, session: Session, result: IngestResult) -> None:
        pass


Keep = Callable[[Session, IngestResult], None]


class Batch:
    """A stream's batch of records made in memory, named by its source (a followed log's chunk, an event
    file's records, a live scrape's window): no digest (no file is recorded; its offset or window says
    what was read), and `kept` runs in its transaction (the offset saved, the window judged)."""

    def __init__(
        self,
        name: str,
        fmt: Format,
        records: Iterable[Located],
        problems: list[Problem] | None = None,
        kept: Keep | None = None,
    ):
        self.name, self.fmt = name, fmt
        self.records = list(records)
        self.problems = problems if problems is not None else []
        self.kept = kept

    def digest(self, policy: IngestPolicy) -> str | None:
        return None

    def read(self, policy: IngestPolicy, spool: Spool, stream: bool) -> Read:
        return Read(self.name, self.fmt, self.records, self.problems, count=len(self.records))

    def keep(self, session: Session, result: IngestResult) -> None:
        if self.kept is not None:
            self.kept(session, result)
