"""Ingest one file (from disk or from the upload page): hash, detect, parse, validate, store, refresh gaps.

A file is parsed and validated first, with no lock held, into a temporary spool of records; only then is
the write lock taken, to store them and refresh gaps in one transaction. A file with problems writes
nothing unless `skip_invalid` is set, and a file already ingested (same sha256) is skipped.
`preview_bytes` runs the same path in a transaction that is always rolled back, for a dry run."""

import hashlib
import io
import math
import os
import pickle
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import Session

from specdash.db.advisories import AdvisorySummary, refresh_advisories
from specdash.db.bulk import chunks, update_in
from specdash.db.changes import current_who, record_change
from specdash.db.engine import WRITE_OPTION, transaction
from specdash.db.models import Benchmark, Gap, IngestedFile
from specdash.db.records import MAX_INT, NAME_CHARS, PATH_CHARS
from specdash.db.refresh import RefreshSummary, refresh
from specdash.ingest.formats import BY_NAME, Format, Located, detect_format
from specdash.ingest.problems import Problem
from specdash.ingest.records import MetricRows
from specdash.ingest.store import BenchmarkLink, LinkError, LinkOptions, Store, StoreSummary

HEAD_BYTES = 64 * 1024
CHUNK_BYTES = 1024 * 1024
MAX_LINKS_SHOWN = 5
SPOOL_BATCH = 2000
STORE_BATCH = 1000  # records stored together: one duplicate check, one multi-row INSERT of benchmarks
MAX_INTERVAL_NOTES = 12

Progress = Callable[[int], None]


@dataclass
class FileResult:
    path: str
    status: str  # loaded | skipped | failed
    format: str | None = None
    sha256: str | None = None
    store: StoreSummary | None = None
    refresh: RefreshSummary | None = None
    advisories: AdvisorySummary | None = None
    problems: list[Problem] = field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "failed"


@dataclass
class Preview:
    """What ingesting a file would do, computed without writing anything."""

    path: str
    format: str | None
    sha256: str
    already_ingested: str | None  # path it was ingested as, when it was
    problems: list[Problem]
    store: StoreSummary | None  # records, created and duplicate counts, links per benchmark
    refresh: RefreshSummary | None
    gaps: list[dict] = field(default_factory=list)  # benchmark line, prediction source, gap, severity

    @property
    def ok(self) -> bool:
        return self.format is not None and not any(p.kind == "parse" for p in self.problems)

    @property
    def links(self) -> list[BenchmarkLink]:
        return self.store.links if self.store else []


class _Rollback(Exception):
    pass


class _CountingReader(io.RawIOBase):
    """Counts bytes as the parser reads them, for the progress bar."""

    def __init__(self, raw: BinaryIO, progress: Progress | None):
        self.raw, self.progress = raw, progress

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(len(buffer))
        buffer[: len(data)] = data
        if self.progress and data:
            self.progress(len(data))
        return len(data)


def sha256_of(opener: Callable[[], BinaryIO]) -> str:
    digest = hashlib.sha256()
    with opener() as stream:
        while chunk := stream.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _detect(opener: Callable[[], BinaryIO], name: str, fmt_name: str | None) -> Format | Problem:
    """The file's format: detected, or the one forced, which must fit what the file holds."""
    with opener() as stream:
        head = stream.read(HEAD_BYTES)
    if fmt_name and fmt_name not in BY_NAME:
        return Problem(name, None, None, f"unknown format {fmt_name!r}; see 'specdash formats'", "parse")
    if not head.strip():
        return Problem(name, None, None, "file is empty", "parse")
    if b"\x00" in head:
        return Problem(name, None, None, "binary file, not a text format specdash reads", "parse")
    text = head.decode("utf-8-sig", errors="replace")
    if fmt_name:
        forced = BY_NAME[fmt_name]
        if forced.detect(text, name):
            return forced
        # A forced format still needs the file to look like it: parsing a file of another format as this
        # one stores its numbers under the wrong meaning (an aggregate read as per-request tok/s).
        found = detect_format(text, name)
        why = (
            f"it reads as {found.name}"
            if found
            else "its content shows none of that format's fields or lines"
        )
        return Problem(name, None, None, f"--format {fmt_name} does not fit this file: {why}", "parse")
    fmt = detect_format(text, name)
    if fmt is None:
        return Problem(
            name, None, None, "format not recognised; pass --format (see 'specdash formats')", "parse"
        )
    return fmt


@contextmanager
def file_transaction(engine: Engine, bulk_points: bool = False) -> Iterator[Session]:
    """The write transaction of one file. For a training-metrics file on SQLite, foreign-key
    enforcement is off for its duration: every point references a run and keys this same transaction
    created or read, and a per-row check would cost as much as the insert itself."""
    if not (bulk_points and engine.dialect.name == "sqlite"):
        with transaction(engine) as session:
            yield session
        return
    with engine.connect() as connection:
        raw = connection.connection.driver_connection
        raw.execute("PRAGMA foreign_keys=OFF")  # only takes effect outside a transaction: before BEGIN
        try:
            bind = connection.execution_options(**{WRITE_OPTION: True})
            with Session(bind, expire_on_commit=False) as session, session.begin():
                yield session
        finally:
            raw.execute("PRAGMA foreign_keys=ON")


def _already(session: Session, digest: str) -> IngestedFile | None:
    return session.scalar(select(IngestedFile).where(IngestedFile.sha256 == digest))


class _Spool:
    """The validated records of a file, pickled in batches to a temporary file: parsing needs no lock, and
    records waiting for the write lock need no memory."""

    def __init__(self):
        self.file = tempfile.TemporaryFile()
        self.batch: list[Located] = []
        self.count = 0

    def add(self, item: Located) -> None:
        self.batch.append(item)
        self.count += 1
        if len(self.batch) >= SPOOL_BATCH:
            self._dump()

    def _dump(self) -> None:
        if self.batch:
            pickle.dump(self.batch, self.file, protocol=pickle.HIGHEST_PROTOCOL)
            self.batch = []

    def __iter__(self) -> Iterator[Located]:
        self._dump()
        self.file.seek(0)
        while True:
            try:
                batch = pickle.load(self.file)
            except EOFError:
                return
            yield from batch

    def close(self) -> None:
        self.file.close()


class _LineTracked:
    """A text stream that knows the line it last handed out, so a value no parser expected (a 400-digit
    number, nesting past the interpreter's limit) is still reported on its line."""

    def __init__(self, text: io.TextIOBase):
        self._text = text
        self._newlines = 0
        self.line = 1

    def readline(self, size: int = -1) -> str:
        text = self._text.readline(size)
        self.line = self._newlines + 1
        self._newlines += text.count("\n")
        return text

    def read(self, size: int = -1) -> str:
        text = self._text.read(size)
        self.line = self._newlines + 1
        self._newlines += text.count("\n")
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self.readline, "")

    def __getattr__(self, name: str):
        return getattr(self._text, name)


def _metric_rows_problem(name: str, item: Located) -> Problem | None:
    """The bounds a training-log parser's rows must keep (the records' own bounds, for rows that skip them)."""
    for step, keys, values in item.record.steps:
        if not 0 <= step <= MAX_INT:
            return Problem(name, item.line, "step", f"{step} is outside 0..{MAX_INT}")
        for key, value in zip(keys, values, strict=False):
            if not isinstance(value, float | int) or isinstance(value, bool) or not math.isfinite(value):
                return Problem(name, item.line, key[:NAME_CHARS], "must be a finite number")
            if len(key) > NAME_CHARS:
                return Problem(name, item.line, key[:40] + "...", f"metric name over {NAME_CHARS} characters")
    return None


def _parse(fmt: Format, name: str, opener, link, progress, problems: list[Problem], sink) -> int:
    """Parse and validate every record of the file into sink(Located); returns the bytes read."""
    with opener() as raw:
        counting = _CountingReader(raw, progress)
        # utf-8-sig: a byte-order mark at the start is not part of the text; newlines of any kind are read.
        text = _LineTracked(
            io.TextIOWrapper(
                io.BufferedReader(counting, CHUNK_BYTES), encoding="utf-8-sig", errors=fmt.decode_errors
            )
        )
        try:
            for item in fmt.parse(text, name, link):
                if isinstance(item, Problem):
                    problems.append(item)
                    continue
                if isinstance(item.record, MetricRows) and (bad := _metric_rows_problem(name, item)):
                    problems.append(bad)
                    continue
                sink(item)
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, None, None, f"not UTF-8 text: {exc.reason}", "parse"))
        except RecursionError:
            problems.append(Problem(name, text.line, None, "nested too deeply to read", "parse"))
        except (OverflowError, ValueError) as exc:  # a number no parser should have passed on
            problems.append(Problem(name, text.line, None, f"unreadable value: {exc}", "parse"))
        size = raw.tell() if raw.seekable() else 0
    return size


def _store(
    session: Session,
    fmt: Format,
    name: str,
    items,
    link,
    problems: list[Problem],
    update: bool = False,
    action: str = "ingest --update",
) -> Store:
    store = Store(session, link, fmt.name, update=update, source_name=name, change_action=action)
    batch: list[Located] = []
    for item in items:
        batch.append(item)
        if len(batch) >= STORE_BATCH:
            _add_batch(store, batch, name, problems)
            batch = []
    _add_batch(store, batch, name, problems)
    try:
        store.finish()
    except LinkError as exc:
        problems.append(Problem(name, None, exc.field, str(exc)))
    return store


def _load(
    session: Session, fmt: Format, name: str, opener, link, progress, problems: list[Problem]
) -> tuple[Store, int]:
    """Parse and store every record of the file in the session's transaction (the dry run's path)."""
    items: list[Located] = []
    size = _parse(fmt, name, opener, link, progress, problems, items.append)
    store = _store(session, fmt, name, items, link, problems)
    if store.summary.records == 0 and not problems:
        problems.append(Problem(name, None, None, "no records found", "parse"))
    return store, size


def _refresh(session: Session, summary: StoreSummary) -> RefreshSummary:
    # New benchmarks change only their own gaps (and, for a baseline, those on its deployment);
    # changed profiles, acceptance or external predictions can change any.
    everything = bool(summary.updated) or summary.created["prediction"] or summary.acceptance_changed
    return refresh(session, None if everything else summary.benchmark_ids)


def refresh_runs_advice(session: Session, store: Store) -> AdvisorySummary:
    # New benchmarks (baselines, loads) and deployments can change any run's advice; metrics only their run's.
    summary = store.summary
    everything = summary.benchmark_ids or summary.created["deployment"] or summary.updated["deployment"]
    return refresh_advisories(session, None if everything else store.run_ids)


def ingest_source(
    engine: Engine,
    name: str,
    opener: Callable[[], BinaryIO],
    *,
    fmt_name: str | None = None,
    skip_invalid: bool = False,
    link: LinkOptions | None = None,
    progress: Progress | None = None,
    update: bool = False,
    replace: bool = False,
) -> FileResult:
    """update: a file's values win where they contradict stored ones (else each is a conflict, reported);
    replace: what an earlier ingest of this same file stored is removed first, then the file is stored
    again (to correct a wrong --deployment, --run or --checkpoint)."""
    digest = sha256_of(opener)
    with transaction(engine, write=False) as session:
        seen = _already(session, digest)
        if seen is not None and not replace:
            return FileResult(
                name, "skipped", seen.format, digest, message=f"already ingested as {seen.path}"
            )
    fmt = _detect(opener, name, fmt_name)
    if isinstance(fmt, Problem):
        return FileResult(name, "failed", None, digest, problems=[fmt])

    result = FileResult(name, "loaded", fmt.name, digest)
    spool = _Spool()
    try:
        # Everything that reads the file happens here, before the write lock is asked for.
        size = _parse(fmt, name, opener, link, progress, result.problems, spool.add)
        if spool.count == 0 and not result.problems:
            result.problems.append(Problem(name, None, None, "no records found", "parse"))
        if result.problems and (not skip_invalid or spool.count == 0):
            result.status = "failed"
            return result
        with file_transaction(engine, fmt.bulk_points) as session:
            # Another process may have loaded the same file while this one waited for the write lock.
            seen = _already(session, digest)
            if seen is not None and not replace:
                return FileResult(
                    name, "skipped", seen.format, digest, message=f"already ingested as {seen.path}"
                )
            if seen is not None:
                result.message = _remove_ingest(session, seen)
                record_change(session, "ingest --replace", "file", seen.path, note=result.message)
            action = "ingest --replace" if replace else "ingest --update"
            store = _store(
                session, fmt, name, spool, link, result.problems, update=update or replace, action=action
            )
            summary = store.summary
            if result.problems and (not skip_invalid or summary.records == 0):
                raise _Rollback
            ingested = IngestedFile(
                sha256=digest,
                path=name[-PATH_CHARS:],
                format=fmt.name,
                size_bytes=size,
                records=summary.records,
                ingested_by=current_who(),
            )
            session.add(ingested)
            session.flush()
            update_in(session, Benchmark, summary.benchmark_ids, ingested_file_id=ingested.id)
            result.refresh = _refresh(session, summary)
            result.advisories = refresh_runs_advice(session, store)
            result.store = summary
    except _Rollback:
        result.status = "failed"
        result.store = None
    finally:
        spool.close()
    return result


def _remove_ingest(session: Session, ingested: IngestedFile) -> str:
    """Remove the benchmarks an earlier ingest stored (their gaps and history go with them) and its record."""
    removed = session.execute(delete(Benchmark).where(Benchmark.ingested_file_id == ingested.id)).rowcount
    session.delete(ingested)
    session.flush()
    return f"replaced the earlier ingest of {ingested.path} ({removed} benchmark(s) removed)"


def preview_source(
    engine: Engine,
    name: str,
    opener: Callable[[], BinaryIO],
    *,
    fmt_name: str | None = None,
    link: LinkOptions | None = None,
) -> Preview:
    """Detect, validate, link, predict: everything ingest does, then roll it all back."""
    digest = sha256_of(opener)
    fmt = _detect(opener, name, fmt_name)
    if isinstance(fmt, Problem):
        return Preview(name, None, digest, None, [fmt], None, None)
    problems: list[Problem] = []
    preview = Preview(name, fmt.name, digest, None, problems, None, None)
    try:
        with file_transaction(engine, fmt.bulk_points) as session:
            seen = _already(session, digest)
            preview.already_ingested = seen.path if seen is not None else None
            store, _ = _load(session, fmt, name, opener, link, None, problems)
            preview.store = store.summary
            if store.summary.benchmark_ids:
                preview.refresh = _refresh(session, store.summary)
                preview.gaps = _gap_rows(session, store.summary)
            raise _Rollback  # a preview never writes
    except _Rollback:
        pass
    return preview


def _gap_rows(session: Session, summary: StoreSummary) -> list[dict]:
    if not summary.benchmark_ids:
        return []
    rows = [
        row
        for chunk in chunks(summary.benchmark_ids)
        for row in session.execute(
            select(
                Gap.benchmark_id, Gap.gap, Gap.measured_tps, Gap.predicted_tps, Gap.severity, Gap.diagnoses
            )
            .where(Gap.benchmark_id.in_(chunk))
            .order_by(Gap.benchmark_id)
        )
    ]
    return [
        dict(
            benchmark_id=b,
            gap=g,
            measured_tps=m,
            predicted_tps=p,
            severity=s,
            diagnoses=[d["code"] for d in (diag or [])],
        )
        for b, g, m, p, s, diag in rows
    ]


def _add_batch(store: Store, batch: list[Located], name: str, problems: list[Problem]) -> None:
    store.prefetch_keys([item.record for item in batch])  # one duplicate check for the whole batch
    for item in batch:
        _add(store, item, name, problems)


def _add(store: Store, item: Located, name: str, problems: list[Problem]) -> None:
    try:
        store.add(item.record, item.line)
    except LinkError as exc:
        problems.append(Problem(name, item.line, exc.field, str(exc)))


def not_a_file(path: str | Path) -> str | None:
    """Why a path cannot be ingested (missing, a folder, a FIFO or device that would never end), or None."""
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if not stat.S_ISREG(mode):
        kind = (
            "FIFO"
            if stat.S_ISFIFO(mode)
            else "device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "socket"
            if stat.S_ISSOCK(mode)
            else "special file"
        )
        return f"is a {kind}, not a regular file: specdash reads files that end"
    return None


def _open_regular(path: Path) -> BinaryIO:
    # O_NONBLOCK: a path swapped for a FIFO after the check must not block the open.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path}: not a regular file")
    return os.fdopen(fd, "rb")


def ingest_path(engine: Engine, path: str | Path, **options) -> FileResult:
    path = Path(path)
    why = not_a_file(path)
    if why is not None:
        return FileResult(str(path), "failed", problems=[Problem(str(path), None, None, why, "parse")])
    try:
        return ingest_source(engine, str(path), lambda: _open_regular(path), **options)
    except OSError as exc:
        if exc.filename is None or Path(exc.filename) != path:
            raise  # the store's or the spool's fault, not the file's
        return FileResult(
            str(path),
            "failed",
            problems=[Problem(str(path), None, None, f"cannot read: {exc.strerror}", "parse")],
        )


def ingest_bytes(engine: Engine, name: str, data: bytes, **options) -> FileResult:
    return ingest_source(engine, name, lambda: io.BytesIO(data), **options)


def preview_bytes(
    engine: Engine, name: str, data: bytes, fmt_name: str | None = None, link: LinkOptions | None = None
) -> Preview:
    return preview_source(engine, name, lambda: io.BytesIO(data), fmt_name=fmt_name, link=link)


def describe_links(summary: StoreSummary) -> str:
    """'run7/epoch_2 by path (2), baseline (1)': where a file's benchmarks went, most frequent first."""
    counts = Counter({kind: n for kind, n in summary.link_counts.items() if kind != "duplicate"})
    shown = [f"{what} ({n})" for what, n in counts.most_common(MAX_LINKS_SHOWN)]
    if len(counts) > MAX_LINKS_SHOWN:
        shown.append(f"{len(counts) - MAX_LINKS_SHOWN} more")
    return ", ".join(shown)


def describe(result: FileResult) -> str:
    """One paragraph on what happened to a file, the same in the CLI and the upload page."""
    if result.status == "skipped":
        return f"{result.path}: skipped, {result.message} (sha256 {result.sha256[:12]})"
    if result.status == "failed":
        return f"{result.path}: nothing written ({len(result.problems)} problem(s))"
    s, r = result.store, result.refresh
    created = ", ".join(f"{n} {k}(s)" for k, n in sorted(s.created.items())) or "nothing new"
    parts = [f"{result.path}: {s.records} record(s) as {result.format}; created {created}"]
    if s.replaced:
        parts.append(f"{s.replaced} stored value(s) replaced by the file's (see 'specdash changes')")
    if result.message:
        parts.append(result.message)
    if s.metric_points:
        parts.append(f"{s.metric_points} metric point(s)")
    if s.points_kept:
        parts.append(
            f"{s.points_kept} point(s) already stored at the same run, key and step kept as they were"
        )
    if s.derived_acceptance:
        parts.append(f"per-position acceptance of {s.derived_acceptance} checkpoint(s) from training metrics")
    if s.linked or s.unlinked:
        parts.append(f"{s.linked} benchmark(s) linked to a checkpoint, {s.unlinked} not linked")
    if s.linked or s.unlinked or s.link_counts["target's own head"]:
        parts.append(f"benchmarks: {describe_links(s)}")
    logged = [link for link in s.links if link.intervals]
    if logged:
        shown = [f"line {link.line} ({link.label}): {link.intervals}" for link in logged[:MAX_INTERVAL_NOTES]]
        if len(logged) > MAX_INTERVAL_NOTES:
            shown.append(f"{len(logged) - MAX_INTERVAL_NOTES} more")
        parts.append("intervals per benchmark: " + " | ".join(shown))
    derived = [link for link in s.links if link.derived]
    if derived:
        shown = [f"line {link.line}: {link.derived}" for link in derived[:MAX_INTERVAL_NOTES]]
        if len(derived) > MAX_INTERVAL_NOTES:
            shown.append(f"{len(derived) - MAX_INTERVAL_NOTES} more")
        parts.append("derived: " + " | ".join(shown))
    if s.duplicates:
        parts.append(f"{s.duplicates} duplicate record(s) skipped")
    if result.problems:
        parts.append(f"{len(result.problems)} invalid record(s) skipped")
    if r is not None:
        parts.append(f"{r.predictions} prediction(s) refreshed, {r.new_alerts} new alert(s)")
    if result.advisories is not None and result.advisories.new:
        parts.append(f"{len(result.advisories.new)} new advisory(ies) (see 'specdash advisories')")
    return "; ".join(parts) + "."


def describe_totals(results: list[FileResult]) -> str:
    """The closing paragraph of a multi-file ingest: files, records, what was linked and created."""
    loaded = [r for r in results if r.status == "loaded"]
    created: Counter = Counter()
    for r in loaded:
        created.update(r.store.created)
    status = Counter(r.status for r in results)
    parts = [
        f"{len(results)} file(s): {status['loaded']} loaded, {status['skipped']} skipped, {status['failed']} failed",
        f"{sum(r.store.records for r in loaded)} record(s)",
        f"created {', '.join(f'{n} {k}(s)' for k, n in sorted(created.items())) or 'nothing new'}",
        f"{sum(r.store.linked for r in loaded)} benchmark(s) linked, {sum(r.store.unlinked for r in loaded)} not linked",
        f"{sum(r.store.duplicates for r in loaded)} duplicate(s) skipped",
        f"{sum(r.refresh.new_alerts for r in loaded if r.refresh)} new alert(s)",
    ]
    return "; ".join(parts) + "."
