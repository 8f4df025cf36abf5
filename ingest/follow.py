"""Follow growing files (`specdash ingest --follow`, `specdash watch`): new lines ingested as they arrive.

A training log (SpecForge console output) is read a chunk of complete lines at a time; the chunk's
records, the refreshed predictions, alerts and advisories, and the file's new offset commit in one
transaction, so a follower killed at any moment resumes where the store says and neither loses nor
repeats a line (metric points are keyed by run, key and step besides). The parser's state (run name,
args block) is kept with the offset. A file that shrinks below the offset was truncated and is read
again from the start; a path that names another file (same path, new inode) was rotated: the rest of
the old file is read, then the new one from its start. The bytes of one chunk are the memory bound.

Other formats (a server log summarised into one benchmark, a result file) are ingested whole once they
stop changing for a moment, by the ordinary pipeline: a new version supersedes the benchmark the
previous version gave."""

import hashlib
import io
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from specdash.db.engine import transaction
from specdash.db.live_models import FollowedFile
from specdash.db.models import utcnow
from specdash.ingest.describe import describe
from specdash.ingest.formats import BY_NAME, Format, detect_format
from specdash.ingest.formats.specforge_log import NAME as TRAINING_LOG
from specdash.ingest.formats.specforge_log import TrainingLog, parse_lines
from specdash.ingest.links import LinkOptions
from specdash.ingest.load import FileResult, Parsed, file_transaction, ingest_path, load_file
from specdash.ingest.problems import Problem
from specdash.ingest.read import HEAD_BYTES, checked

MAX_CHUNK_BYTES = 4 * 1024 * 1024
FINGERPRINT_BYTES = 1024
SETTLE_SECONDS = 2.0
MAX_SAVED_PATHS = 1000
INCREMENTAL = {TRAINING_LOG}

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
    result: FileResult | None = None

    @property
    def changed(self) -> bool:
        return bool(self.lines or self.records or self.problems or self.notes or self.result)

    def describe(self) -> str:
        if self.result is not None:
            return describe(self.result)
        parts = [f"{self.path}: +{self.lines} line(s)"]
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


class _Moved(Exception):
    """The stored offset moved under this follower: another one follows the same file."""


class _Tracked:
    """In-memory state of one followed path; the store's FollowedFile row is the durable copy."""

    def __init__(self, path: str):
        self.path = path
        self.fmt: Format | None = None
        self.handle = None
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


class Follower:
    """Polls a set of paths (fixed, or found anew each poll by `discover`) and ingests what is new."""

    def __init__(
        self,
        engine: Engine,
        paths: Iterable[str] = (),
        *,
        discover: Callable[[], Iterable[str]] | None = None,
        fmt_name: str | None = None,
        link: LinkOptions | None = None,
        settle_seconds: float = SETTLE_SECONDS,
        max_chunk_bytes: int = MAX_CHUNK_BYTES,
        in_transaction: InTransaction | None = None,
    ):
        self.engine = engine
        self.discover = discover
        self.fmt_name = fmt_name
        self.link = link or LinkOptions()
        self.settle_seconds = settle_seconds
        self.max_chunk_bytes = max_chunk_bytes
        self.in_transaction = in_transaction
        self.tracked: dict[str, _Tracked] = {}
        for path in paths:
            self._track(path)

    def _track(self, path: str) -> _Tracked:
        key = str(Path(path).absolute())
        if key not in self.tracked:
            self.tracked[key] = _Tracked(key)
        return self.tracked[key]

    def close(self) -> None:
        for tracked in self.tracked.values():
            tracked.close()

    def __enter__(self) -> "Follower":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- the loop --------------------------------------------------------------------------------------
    def poll(self) -> list[FollowEvent]:
        if self.discover is not None:
            for path in self.discover():
                self._track(path)
        events = []
        for tracked in list(self.tracked.values()):
            if tracked.failed:
                continue
            event = FollowEvent(tracked.path)
            try:
                self._poll_file(tracked, event)
            except OSError as exc:  # vanished between stat and open, permissions, ...
                tracked.close()
                event.notes.append(f"cannot read: {exc.strerror or exc}")
            if event.changed:
                events.append(event)
        return events

    def run(
        self,
        poll_seconds: float = 0.5,
        on_event: Callable[[FollowEvent], None] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
    ) -> None:
        """Poll until should_stop() says so (or Ctrl-C, which the caller catches)."""
        try:
            while not should_stop():
                for event in self.poll():
                    if on_event is not None:
                        on_event(event)
                if should_stop():
                    break
                time.sleep(poll_seconds)
        finally:
            self.close()

    # --- one file ----------------------------------------------------------------------------------------
    def _load(self, tracked: _Tracked) -> None:
        with transaction(self.engine, write=False) as session:
            row = session.scalar(select(FollowedFile).where(FollowedFile.path == tracked.path))
            if row is not None:
                tracked.offset, tracked.lines = row.offset_bytes, row.lines
                tracked.stored_offset = row.offset_bytes
                tracked.fingerprint, tracked.fingerprint_bytes = row.fingerprint, row.fingerprint_bytes
                tracked.state = dict(row.state or {})
                tracked.identity = (row.device, row.inode) if row.inode is not None else None
                if row.format:
                    tracked.fmt = BY_NAME.get(row.format)
        tracked.loaded = True
        tracked.log = None

    def _detect(self, tracked: _Tracked, head: bytes, event: FollowEvent) -> bool:
        if self.fmt_name:
            tracked.fmt = BY_NAME.get(self.fmt_name)
            if tracked.fmt is None:
                event.problems.append(
                    Problem(tracked.path, None, None, f"unknown format {self.fmt_name!r}", "parse")
                )
                tracked.failed = True
            return tracked.fmt is not None
        if not head.strip():
            return False
        tracked.fmt = detect_format(head.decode("utf-8", errors="replace"), tracked.path)
        if tracked.fmt is None and len(head) >= HEAD_BYTES:
            event.problems.append(
                Problem(
                    tracked.path,
                    None,
                    None,
                    "format not recognised; pass --format (see 'specdash formats')",
                    "parse",
                )
            )
            tracked.failed = True
        return tracked.fmt is not None

    def _poll_file(self, tracked: _Tracked, event: FollowEvent) -> None:
        if not tracked.loaded:
            self._load(tracked)
        try:
            stat = os.stat(tracked.path)
        except FileNotFoundError:
            if tracked.handle is not None:  # rotated away and not recreated yet: finish the old file
                self._read(tracked, event, final=True)
            return
        identity = (stat.st_dev, stat.st_ino)
        if tracked.fmt is None:
            with open(tracked.path, "rb") as stream:
                if not self._detect(tracked, stream.read(HEAD_BYTES), event):
                    return
        if tracked.fmt.name not in INCREMENTAL:
            self._poll_whole(tracked, stat, event)
            return
        if tracked.identity is not None and identity != tracked.identity:
            if tracked.handle is not None:
                self._read(tracked, event, final=True)  # the rest of the rotated file
            tracked.close()
            self._restart(tracked, identity, "rotated: reading the new file from its start")
            event.notes.append(tracked.state.pop("_note"))
        elif stat.st_size < tracked.offset or not self._same_start(tracked):
            tracked.close()
            self._restart(tracked, identity, "truncated: reading it again from the start")
            event.notes.append(tracked.state.pop("_note"))
        tracked.identity = identity
        if stat.st_size > tracked.offset:
            self._read(tracked, event)

    def _restart(self, tracked: _Tracked, identity, note: str) -> None:
        tracked.offset = tracked.lines = 0
        tracked.fingerprint, tracked.fingerprint_bytes = None, 0
        tracked.identity = identity
        tracked.state["_note"] = note

    def _same_start(self, tracked: _Tracked) -> bool:
        if not tracked.fingerprint_bytes:
            return True
        with open(tracked.path, "rb") as stream:
            return _fingerprint(stream.read(tracked.fingerprint_bytes)) == tracked.fingerprint

    def _open(self, tracked: _Tracked):
        if tracked.handle is None:
            tracked.handle = open(tracked.path, "rb")  # noqa: SIM115 (kept open across polls)
            tracked.handle.seek(tracked.offset)
        return tracked.handle

    def _read(self, tracked: _Tracked, event: FollowEvent, final: bool = False) -> None:
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

    def _parser(self, tracked: _Tracked) -> TrainingLog:
        if tracked.log is None:
            log = TrainingLog(tracked.path, self.link)
            log.run = tracked.state.get("run") or log.run
            log.args = dict(tracked.state.get("args") or {})
            log.saved = set(tracked.state.get("saved") or [])
            tracked.log = log
        return tracked.log

    def _commit(self, tracked: _Tracked, chunk: bytes, skipped: int, event: FollowEvent) -> None:
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

        def save(session, result: FileResult) -> None:
            self._save(session, tracked, offset, tracked.lines + lines, log)
            if self.in_transaction is not None:
                self.in_transaction(session)

        try:
            # the chunk's records, the refresh and advice they bring, and the new offset commit together
            result = load_file(
                self.engine,
                Parsed(tracked.path, tracked.fmt, items, problems),
                link=self.link,
                invalid="keep",
                after=save,
            )
        except (_Moved, IntegrityError):  # IntegrityError: both inserted the file's first row at once
            tracked.close()
            tracked.loaded = False  # read the offset and state the other follower stored
            event.notes.append("another follower read these lines first; resuming after it")
            return
        except Exception:
            tracked.log = None  # the parser saw lines that did not commit: rebuild it from the store
            tracked.loaded = False
            raise
        tracked.offset, tracked.lines = offset, tracked.lines + lines
        event.lines += lines
        event.records += result.store.records
        event.metric_points += result.store.metric_points
        event.new_alerts += result.refresh.new_alerts
        event.new_advisories += len(result.advisories.new)
        event.problems += problems

    def _save(self, session, tracked: _Tracked, offset: int, lines: int, log: TrainingLog | None) -> None:
        row = session.scalar(select(FollowedFile).where(FollowedFile.path == tracked.path))
        if row is not None and log is not None and row.offset_bytes != tracked.stored_offset:
            raise _Moved  # another follower of the same file got here first: take its place, not these lines
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

    # --- whole files ---------------------------------------------------------------------------------------
    def _poll_whole(self, tracked: _Tracked, stat: os.stat_result, event: FollowEvent) -> None:
        seen = (stat.st_size, stat.st_mtime_ns)
        now = time.monotonic()
        if seen != tracked.seen:
            tracked.seen, tracked.stable_since = seen, now
            return
        if now - tracked.stable_since < self.settle_seconds or tracked.state.get("ingested") == list(seen):
            return
        result = ingest_path(
            self.engine, tracked.path, fmt_name=tracked.fmt.name, skip_invalid=True, link=self.link
        )
        with file_transaction(self.engine) as session:
            if result.status == "loaded" and result.store and result.store.benchmark_ids:
                self._supersede(session, tracked.state.get("benchmark_ids") or [], result.store.benchmark_ids)
                tracked.state["benchmark_ids"] = list(result.store.benchmark_ids)
            tracked.state["ingested"] = list(seen)
            tracked.identity = (stat.st_dev, stat.st_ino)
            self._save(session, tracked, stat.st_size, tracked.lines, None)
            if self.in_transaction is not None:
                self.in_transaction(session)
        if result.status != "skipped":
            event.result = result
            event.problems += result.problems

    def _supersede(self, session, old_ids: list[int], new_ids: list[int]) -> None:
        """A server log summarised again: its new benchmark replaces the one its earlier version gave."""
        from specdash.db.alerts import AlertChangeError, link_superseding

        if len(old_ids) != 1 or len(new_ids) != 1 or old_ids == new_ids:
            return
        try:
            link_superseding(
                session,
                old_ids[0],
                new_ids[0],
                who="specdash",
                note="the followed log grew; summarised again",
            )
        except AlertChangeError:
            pass  # another checkpoint, or already superseded: both benchmarks stand
