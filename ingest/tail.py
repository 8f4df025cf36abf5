"""A followed training log (SpecForge console output), read a chunk of complete lines at a time: the
chunk's records, the predictions, alerts and advice they refresh, and the file's new offset commit in one
transaction (ingest/pipeline.py's ingest), so a follower killed at any moment resumes where the store says
and neither loses nor repeats a line (metric points are keyed by run, key and step besides). The parser's
state (run name, args block) is kept with the offset. A file that shrinks below the offset was truncated
and is read again from the start; a path that names another file (same path, new inode) was rotated:
the rest of the old file is read, then the new one from its start. The bytes of one chunk are the memory
bound."""

import hashlib
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import BinaryIO

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from specdash.db.engine import transaction
from specdash.db.live_models import FollowedFile
from specdash.db.models import utcnow
from specdash.ingest.describe import describe
from specdash.ingest.formats import BY_NAME
from specdash.ingest.formats.base import Format
from specdash.ingest.formats.specforge_log import TrainingLog, parse_lines
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.problems import Problem
from specdash.ingest.read import checked
from specdash.ingest.results import IngestResult
from specdash.ingest.sources import Batch

FINGERPRINT_BYTES = 1024
MAX_SAVED_PATHS = 1000

# Called inside each chunk's transaction (e.g. to queue webhook notifications with what raised them).
InTransaction = Callable[..., None]


@dataclass
class FollowEvent:
    """What one poll did to one file."""

    path: str
    lines: int = 0
    records: int = 0  # a logged step's metrics count as one record
    metric_points: int = 0
    new_alerts: int = 0
    new_advisories: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # truncated, rotated, ingested whole, ...
    result: IngestResult | None = None
    unit: str = "line"  # what `lines` counts: a log's lines, an event file's records

    def add(self, result: IngestResult, lines: int, problems: list[Problem]) -> None:
        """What one committed chunk did (a kept chunk is stored, refreshed and advised on, problems or not)."""
        assert result.store is not None and result.refresh is not None and result.advisories is not None
        self.lines += lines
        self.records += result.store.records
        self.metric_points += result.store.metric_points
        self.new_alerts += result.refresh.new_alerts
        self.new_advisories += len(result.advisories.new)
        self.problems += problems

    @property
    def changed(self) -> bool:
        return bool(self.lines or self.records or self.problems or self.notes or self.result)

    def describe(self) -> str:
        if self.result is not None:
            return describe(self.result)
        parts = [f"{self.path}: +{self.lines} {self.unit}(s)"]
        if self.metric_points:
            parts.append(f"{self.metric_points} metric point(s)")
        if self.new_alerts:
            parts.append(f"{self.new_alerts} new alert(s)")
        if self.new_advisories:
            parts.append(f"{self.new_advisories} new advisory(ies)")
        parts += self.notes
        if self.problems:
            parts.append(f"{len(self.problems)} invalid line(s) skipped")
        return "; ".join(parts)


def _fingerprint(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Moved(Exception):
    """The stored offset moved under this follower: another one follows the same file."""


class Tracked:
    """In-memory state of one followed path; the store's FollowedFile row is the durable copy."""

    def __init__(self, path: str):
        self.path = path
        self.fmt: Format | None = None
        self.handle: BinaryIO | None = None
        self.identity: tuple[int, int] | None = None  # (device, inode) of the file being read
        self.offset = 0
        self.stored_offset = 0  # the offset the store held when this follower last read or wrote it
        self.lines = 0
        self.fingerprint: str | None = None
        self.fingerprint_bytes = 0
        self.state: dict = {}
        self.log: TrainingLog | None = None
        self.loaded = False
        self.seen: tuple[int, int] | None = None  # (size, mtime_ns) at the last poll, whole-file formats
        self.stable_since = 0.0
        self.failed = False

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def load_tracked(engine: Engine, tracked: Tracked) -> None:
    """The followed file's offset and parser state as the store holds them."""
    with transaction(engine, write=False) as session:
        row = session.scalar(select(FollowedFile).where(FollowedFile.path == tracked.path))
        if row is not None:
            tracked.offset, tracked.lines = row.offset_bytes, row.lines
            tracked.stored_offset = row.offset_bytes
            tracked.fingerprint, tracked.fingerprint_bytes = row.fingerprint, row.fingerprint_bytes
            tracked.state = dict(row.state or {})
            if row.device is not None and row.inode is not None:
                tracked.identity = (row.device, row.inode)
            else:
                tracked.identity = None
            if row.format:
                tracked.fmt = BY_NAME.get(row.format)
    tracked.loaded = True
    tracked.log = None


def save_tracked(
    session: Session, tracked: Tracked, offset: int, lines: int, log: TrainingLog | None
) -> None:
    """Store how far the file was read (and a training log's parser state), in the caller's transaction."""
    row = session.scalar(select(FollowedFile).where(FollowedFile.path == tracked.path))
    if row is not None and log is not None and row.offset_bytes != tracked.stored_offset:
        raise Moved  # another follower of the same file got here first: take its place, not these lines
    if row is None:
        row = FollowedFile(path=tracked.path)
        session.add(row)
    if tracked.fingerprint_bytes < FINGERPRINT_BYTES and offset > tracked.fingerprint_bytes:
        with open(tracked.path, "rb") as stream:
            head = stream.read(min(offset, FINGERPRINT_BYTES))
        tracked.fingerprint, tracked.fingerprint_bytes = _fingerprint(head), len(head)
    state = dict(tracked.state)
    if log is not None:
        state.update(run=log.run, args=log.args, saved=sorted(log.saved)[-MAX_SAVED_PATHS:])
    row.format = tracked.fmt.name if tracked.fmt else None
    row.device, row.inode = tracked.identity or (None, None)
    row.offset_bytes, row.lines = offset, lines
    tracked.stored_offset = offset  # a transaction that fails makes the follower read the store again
    row.fingerprint, row.fingerprint_bytes = tracked.fingerprint, tracked.fingerprint_bytes
    row.state = state
    row.updated_at = utcnow()
    tracked.state = state


class LogTail:
    """Reads followed training logs for a Follower: what each gained, a chunk per transaction."""

    def __init__(
        self, engine: Engine, policy: IngestPolicy, max_chunk_bytes: int, in_transaction: InTransaction | None
    ):
        self.engine = engine
        self.policy = policy
        self.link = policy.link
        self.max_chunk_bytes = max_chunk_bytes
        self.in_transaction = in_transaction

    def poll(self, tracked: Tracked, stat: os.stat_result, event: FollowEvent) -> None:
        """Read what the log gained since the last poll; a rotated log's rest first, a truncated one again
        from its start."""
        identity = (stat.st_dev, stat.st_ino)
        if tracked.identity is not None and identity != tracked.identity:
            if tracked.handle is not None:
                self.read(tracked, event, final=True)  # the rest of the rotated file
            tracked.close()
            self._restart(tracked, identity, "rotated: reading the new file from its start")
            event.notes.append(tracked.state.pop("_note"))
        elif stat.st_size < tracked.offset or not self._same_start(tracked):
            tracked.close()
            self._restart(tracked, identity, "truncated: reading it again from the start")
            event.notes.append(tracked.state.pop("_note"))
        tracked.identity = identity
        if stat.st_size > tracked.offset:
            self.read(tracked, event)

    def _restart(self, tracked: Tracked, identity, note: str) -> None:
        tracked.offset = tracked.lines = 0
        tracked.fingerprint, tracked.fingerprint_bytes = None, 0
        tracked.identity = identity
        tracked.state["_note"] = note

    def _same_start(self, tracked: Tracked) -> bool:
        if not tracked.fingerprint_bytes:
            return True
        with open(tracked.path, "rb") as stream:
            return _fingerprint(stream.read(tracked.fingerprint_bytes)) == tracked.fingerprint

    def _open(self, tracked: Tracked):
        if tracked.handle is None:
            tracked.handle = open(tracked.path, "rb")  # noqa: SIM115 (kept open across polls)
            tracked.handle.seek(tracked.offset)
        return tracked.handle

    def read(self, tracked: Tracked, event: FollowEvent, final: bool = False) -> None:
        """Ingest the complete lines after the offset, a chunk per transaction (a finished, rotated file
        also its last line without a newline)."""
        handle = self._open(tracked)
        while True:
            handle.seek(tracked.offset)
            data = handle.read(self.max_chunk_bytes)
            if not data:
                return
            end = data.rfind(b"\n") + 1
            skipped = 0
            if end == 0:
                if final:
                    end = len(data)
                elif len(data) < self.max_chunk_bytes:
                    return  # a line still being written
                else:  # one line longer than a chunk: skip it without holding it
                    skipped = self._skip_long_line(handle, tracked.offset)
            chunk = data[:end] if not skipped else b""
            self._commit(tracked, chunk, skipped, event)
            if len(data) < self.max_chunk_bytes and not skipped:
                return

    def _skip_long_line(self, handle, start: int) -> int:
        handle.seek(start)
        length = 0
        while True:
            block = handle.read(1024 * 1024)
            if not block:
                return length
            newline = block.find(b"\n")
            if newline >= 0:
                return length + newline + 1
            length += len(block)

    def _parser(self, tracked: Tracked) -> TrainingLog:
        if tracked.log is None:
            log = TrainingLog(tracked.path, self.link)
            log.run = tracked.state.get("run") or log.run
            log.args = dict(tracked.state.get("args") or {})
            log.saved = set(tracked.state.get("saved") or [])
            tracked.log = log
        return tracked.log

    def _commit(self, tracked: Tracked, chunk: bytes, skipped: int, event: FollowEvent) -> None:
        log = self._parser(tracked)
        problems: list[Problem] = []
        lines = chunk.count(b"\n") + (1 if chunk and not chunk.endswith(b"\n") else 0)
        items = []
        if skipped:
            lines = 1
            problems.append(
                Problem(
                    tracked.path,
                    tracked.lines + 1,
                    None,
                    f"line of {skipped:,} bytes is over the size cap",
                    "parse",
                )
            )
        else:  # parsed before the write lock, as a whole file is; one chunk is the memory bound
            text = io.StringIO(chunk.decode("utf-8", errors="replace"))
            items = list(
                checked(parse_lines(log, text, first_line=tracked.lines + 1), tracked.path, problems)
            )
        offset = tracked.offset + (skipped or len(chunk))

        def save(session, result: IngestResult) -> None:
            save_tracked(session, tracked, offset, tracked.lines + lines, log)
            if self.in_transaction is not None:
                self.in_transaction(session)

        try:
            # the chunk's records, the refresh and advice they bring, and the new offset commit together
            assert tracked.fmt is not None  # polled once its format was known
            chunk_source = Batch(tracked.path, tracked.fmt, items, problems, kept=save)
            result = ingest(self.engine, chunk_source, self.policy)
        except (Moved, IntegrityError):  # IntegrityError: both inserted the file's first row at once
            tracked.close()
            tracked.loaded = False  # read the offset and state the other follower stored
            event.notes.append("another follower read these lines first; resuming after it")
            return
        except Exception:
            tracked.log = None  # the parser saw lines that did not commit: rebuild it from the store
            tracked.loaded = False
            raise
        tracked.offset, tracked.lines = offset, tracked.lines + lines
        event.add(result, lines, problems)
