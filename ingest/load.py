"""Loading into the store: load_file() is the one transaction that stores a parsed batch of records, records
the file, refreshes what the batch touched and re-advises its runs. `specdash ingest` and the Upload page
(ingest_path, ingest_bytes), its dry run (preview_bytes, rolled back), a followed log (ingest/follow.py, a
chunk at a time, its offset saved in the same transaction) and a live scrape's windows (load_records) all
go through it. A file is read first (ingest/read.py) with no lock held; only then is the write lock taken.
A text log of training metrics is the exception: it is stored as it is read, inside its transaction
(ingest/streamed.py), and a problem rolls back what it stored. A file with problems writes nothing unless
`skip_invalid` is set; one already ingested is skipped."""

import io
from collections.abc import Callable, Iterable
from dataclasses import replace as replace_field
from pathlib import Path
from typing import Any, Literal, cast

from sqlalchemy import CursorResult, Engine, delete, select
from sqlalchemy.orm import Session

from specdash.db.advisories import AdvisorySummary, refresh_advisories
from specdash.db.bulk import update_in
from specdash.db.changes import current_who, record_change
from specdash.db.engine import file_transaction, transaction
from specdash.db.models import Benchmark, IngestedFile
from specdash.db.records import PATH_CHARS
from specdash.db.refresh_summary import RefreshSummary
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.links import LinkOptions
from specdash.ingest.problems import Problem
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
from specdash.ingest.results import FileResult, Parsed, Preview
from specdash.ingest.rules import FileRules
from specdash.ingest.store import Store, store_records
from specdash.ingest.store_summary import StoreSummary
from specdash.ingest.streamed import Resumed, StreamedLog
from specdash.ingest.trackers.base import TrackerReader

# What a batch's problems do: refuse it (nothing written), skip the invalid records (--skip-invalid; a
# batch with no valid record is refused), or keep the valid ones whatever (a followed log moves on).
Invalid = Literal["refuse", "skip", "keep"]


class _Refused(Exception):
    """The batch's problems refuse it: its transaction rolls back."""


class _DryRun(Exception):
    """A dry run's transaction rolls back once its results are read."""


def load_file(
    engine: Engine,
    parsed: Parsed,
    *,
    link: LinkOptions | None = None,
    invalid: Invalid = "refuse",
    update: bool = False,
    replace: bool = False,
    dry_run: bool = False,
    after: Callable[[Session, FileResult], None] | None = None,
) -> FileResult:
    """Store `parsed` in one transaction: the file's earlier ingest removed first with `replace` (one
    already ingested is skipped otherwise), its records stored (`update`: the file's values win where
    they contradict stored ones), the file recorded, what it touched refreshed and re-advised, then
    `after(session, result)` in the same transaction. A dry run stores and refreshes the file's
    benchmarks (no advice), calls `after`, and rolls everything back."""
    result = FileResult(parsed.name, "loaded", parsed.fmt.name, parsed.sha256, problems=parsed.problems)
    try:
        with file_transaction(engine, parsed.fmt.bulk_points) as session:
            skipped = None if dry_run else _claim(session, parsed, result, replace)
            if skipped is not None:
                return skipped
            rules = FileRules(parsed.name, parsed.fmt, parsed.problems)  # every format, no exception
            store = store_records(
                session,
                parsed.fmt.name,
                parsed.name,
                rules.apply(parsed.records),
                link,
                parsed.problems,
                update=update or replace,
                action="ingest --replace" if replace else "ingest --update",
            )
            summary = result.store = store.summary
            result.message = "; ".join(filter(None, [result.message, *rules.notes]))
            if parsed.problems and _refused(invalid, summary):
                raise _Refused
            if parsed.sha256 is not None and not dry_run:
                _record_file(session, parsed, summary)
            if summary.benchmark_ids or not dry_run:  # a dry run shows the file's own benchmarks
                result.refresh = _refresh(session, summary)
            if not dry_run:
                result.advisories = _advise(session, store)
            if after is not None:
                after(session, result)
            if dry_run:
                raise _DryRun
    except _Refused:
        result.status, result.store = "failed", None
    except _DryRun:
        pass
    return result


def _claim(session: Session, parsed: Parsed, result: FileResult, replace: bool) -> FileResult | None:
    """None when the records are to be stored; the skipped result when the file was ingested already
    (another process may have loaded it while this one waited for the write lock), unless `replace`
    removes that ingest first."""
    if parsed.sha256 is None:
        return None
    seen = already_ingested(session, parsed.sha256)
    if seen is None:
        return None
    if not replace:
        return FileResult(
            parsed.name, "skipped", seen.format, parsed.sha256, message=f"already ingested as {seen.path}"
        )
    result.message = _remove_ingest(session, seen)
    record_change(session, "ingest --replace", "file", seen.path, note=result.message)
    return None


def _refused(invalid: Invalid, summary: StoreSummary) -> bool:
    return invalid == "refuse" or (invalid == "skip" and summary.records == 0)


def already_ingested(session: Session, digest: str) -> IngestedFile | None:
    return session.scalar(select(IngestedFile).where(IngestedFile.sha256 == digest))


def _record_file(session: Session, parsed: Parsed, summary: StoreSummary) -> None:
    assert parsed.sha256 is not None
    ingested = IngestedFile(
        sha256=parsed.sha256,
        path=parsed.name[-PATH_CHARS:],
        format=parsed.fmt.name,
        size_bytes=parsed.size_bytes,
        records=summary.records,
        ingested_by=current_who(),
    )
    session.add(ingested)
    session.flush()
    update_in(session, Benchmark, summary.benchmark_ids, ingested_file_id=ingested.id)


def _remove_ingest(session: Session, ingested: IngestedFile) -> str:
    """Remove the benchmarks an earlier ingest stored (their gaps and history go with them) and its record;
    the Leaderboard's entries of their checkpoints are rewritten without them."""
    from specdash.db import board
    from specdash.db.runs import file_checkpoints

    checkpoints = file_checkpoints(session, ingested.id)
    deleted = session.execute(delete(Benchmark).where(Benchmark.ingested_file_id == ingested.id))
    removed = cast(CursorResult[Any], deleted).rowcount
    session.delete(ingested)
    session.flush()
    board.update(session, checkpoints)
    return f"replaced the earlier ingest of {ingested.path} ({removed} benchmark(s) removed)"


def _refresh(session: Session, summary: StoreSummary) -> RefreshSummary:
    # New benchmarks change only their own gaps (and, for a baseline, those on its deployment);
    # changed profiles, acceptance or external predictions can change any.
    everything = bool(summary.updated) or summary.created["prediction"] or summary.acceptance_changed
    if not everything and not summary.benchmark_ids:
        return RefreshSummary()  # nothing in scope (a file of training metrics): the refresh not even loaded
    from specdash.answers.refresh import refresh

    return refresh(session, None if everything else summary.benchmark_ids)


def _advise(session: Session, store: Store) -> AdvisorySummary:
    # New benchmarks (baselines, loads) and deployments can change any run's advice; metrics only their run's.
    summary = store.summary
    everything = summary.benchmark_ids or summary.created["deployment"] or summary.updated["deployment"]
    return refresh_advisories(session, None if everything else store.run_ids)


def ingest_source(
    engine: Engine,
    name: str,
    opener: Opener,
    *,
    fmt_name: str | None = None,
    skip_invalid: bool = False,
    link: LinkOptions | None = None,
    progress: Progress | None = None,
    update: bool = False,
    replace: bool = False,
) -> FileResult:
    """Read a file, then load it. update: a file's values win where they contradict stored ones (else each
    is a conflict, reported); replace: what an earlier ingest of this same file stored is removed first,
    then the file is stored again (to correct a wrong --deployment, --run or --checkpoint)."""
    digest = sha256_of(opener)
    with transaction(engine, write=False) as session:
        seen = already_ingested(session, digest)
        if seen is not None and not replace:
            return FileResult(
                name, "skipped", seen.format, digest, message=f"already ingested as {seen.path}"
            )
    fmt = detect_file(opener, name, fmt_name)
    if isinstance(fmt, Problem):
        return FileResult(name, "failed", None, digest, problems=[fmt])
    if fmt.bulk_points:
        streamed = _stream(
            engine,
            StreamedLog(fmt, name, opener, link, progress, not skip_invalid),
            digest,
            link,
            update=update,
            replace=replace,
        )
        if streamed is not None:
            return streamed
    spool = Spool()
    try:
        # Everything that reads the file happens here, before the write lock is asked for.
        parsed = _read(fmt, name, opener, link, progress, spool, digest)
        return _load_read(engine, parsed, spool, skip_invalid, link, update=update, replace=replace)
    finally:
        spool.close()


class _Unreadable(Exception):
    """A streamed log's parse problems refuse it: its transaction rolls back."""


def _stream(
    engine: Engine, log: StreamedLog, digest: str, link: LinkOptions | None, **changes: Any
) -> FileResult | None:
    """A training log stored as it is read, in the one transaction (ingest/streamed.py); None when it
    resumed, to be read the spooled way. Its parse problems refuse it as they would a spooled read."""
    parsed = Parsed(log.name, log.fmt, log.records(), [], digest)

    def read(size: int) -> None:  # before the file is recorded: its records are stored first
        parsed.size_bytes = size

    def read_whole(session: Session, result: FileResult) -> None:
        if log.unreadable():
            raise _Unreadable

    log.on_read = read
    try:
        result = load_file(
            engine, parsed, link=link, invalid="refuse" if log.refuse else "skip", after=read_whole, **changes
        )
    except Resumed:
        return None
    except _Unreadable:
        return FileResult(log.name, "failed", log.fmt.name, digest, problems=log.unreadable())
    if result.status == "failed" and log.unreadable():
        return FileResult(log.name, "failed", log.fmt.name, digest, problems=log.unreadable())
    result.problems[:0] = log.problems
    return result


def _load_read(
    engine: Engine, parsed: Parsed, spool: Spool, skip_invalid: bool, link: LinkOptions | None, **changes: Any
) -> FileResult:
    if parsed.problems and (not skip_invalid or spool.count == 0):
        return FileResult(parsed.name, "failed", parsed.fmt.name, parsed.sha256, problems=parsed.problems)
    invalid: Invalid = "skip" if skip_invalid else "refuse"
    return load_file(engine, parsed, link=link, invalid=invalid, **changes)


def ingest_store(
    engine: Engine,
    path: str,
    reader: TrackerReader,
    *,
    label: str | None = None,
    skip_invalid: bool = False,
    link: LinkOptions | None = None,
    update: bool = False,
    replace: bool = False,
    **_file_options: Any,
) -> FileResult:
    """A path source (a tracker's store, a SpecForge config or output folder) read, then loaded as a file
    is: its digest says whether it was ingested already; its records are read before the write lock.
    A file's options that do not apply (`fmt_name`, chosen already; `progress`) are taken and unused."""
    digest, _size = store_digest(reader, path)
    if digest is not None and not replace:
        with transaction(engine, write=False) as session:
            seen = already_ingested(session, digest)
        if seen is not None:
            message = f"already ingested as {seen.path}"
            return FileResult(label or path, "skipped", seen.format, digest, message=message)
    spool = Spool()
    try:
        parsed = _read_store(reader, path, link, spool, label)
        return _load_read(engine, parsed, spool, skip_invalid, link, update=update, replace=replace)
    finally:
        spool.close()


def _read_store(
    reader: TrackerReader, path: str, link: LinkOptions | None, spool: Spool, label: str | None
) -> Parsed:
    """A path source's records into the spool, its problems named by `label` (an upload's own name)."""
    digest, size = store_digest(reader, path)
    problems: list[Problem] = []
    read_store(reader, path, link, problems, spool.add)
    if spool.count == 0 and not problems:
        problems.append(Problem(path, None, None, "no records found", "parse"))
    if label is not None:
        problems = [replace_field(p, path=label) if p.path.startswith(path) else p for p in problems]
    return Parsed(label or path, reader_format(reader), spool, problems, digest, size)


def _read(
    fmt: Format,
    name: str,
    opener: Opener,
    link: LinkOptions | None,
    progress: Progress | None,
    spool: Spool,
    digest: str,
) -> Parsed:
    problems: list[Problem] = []
    size = parse_file(fmt, name, opener, link, progress, problems, spool.add)
    if spool.count == 0 and not problems:
        problems.append(Problem(name, None, None, "no records found", "parse"))
    return Parsed(name, fmt, spool, problems, digest, size)


def preview_source(
    engine: Engine,
    name: str,
    opener: Opener,
    *,
    fmt_name: str | None = None,
    link: LinkOptions | None = None,
) -> Preview:
    """Detect, validate, link, predict: everything ingest does, then roll it all back."""
    digest = sha256_of(opener)
    fmt = detect_file(opener, name, fmt_name)
    if isinstance(fmt, Problem):
        return Preview(name, None, digest, None, [fmt], None, None)
    spool = Spool()
    try:
        return _preview(engine, _read(fmt, name, opener, link, None, spool, digest), link)
    finally:
        spool.close()


def _preview(engine: Engine, parsed: Parsed, link: LinkOptions | None) -> Preview:
    preview = Preview(parsed.name, parsed.fmt.name, parsed.sha256 or "", None, parsed.problems, None, None)

    from specdash.db.gaps import benchmark_gap_rows

    def shown(session: Session, result: FileResult) -> None:
        seen = already_ingested(session, parsed.sha256) if parsed.sha256 else None
        preview.already_ingested = seen.path if seen is not None else None
        preview.store, preview.refresh = result.store, result.refresh
        preview.notes = result.message or None
        if result.store is not None:
            preview.gaps = benchmark_gap_rows(session, result.store.benchmark_ids)

    load_file(engine, parsed, link=link, invalid="keep", dry_run=True, after=shown)
    return preview


def ingest_path(engine: Engine, path: str | Path, **options: Any) -> FileResult:
    """A file, or a path source (ingest/read.py path_reader: a tracker's store, a SpecForge folder)."""
    path = Path(path)
    reader = path_reader(path, options.get("fmt_name"))
    if isinstance(reader, Problem):
        return FileResult(str(path), "failed", problems=[reader])
    if reader is not None:
        return ingest_store(engine, str(path), reader, **options)
    why = not_a_file(path)
    if why is not None:
        return FileResult(str(path), "failed", problems=[Problem(str(path), None, None, why, "parse")])
    try:
        return ingest_source(engine, str(path), lambda: open_regular(path), **options)
    except OSError as exc:
        if exc.filename is None or Path(exc.filename) != path:
            raise  # the store's or the spool's fault, not the file's
        return FileResult(
            str(path),
            "failed",
            problems=[Problem(str(path), None, None, f"cannot read: {exc.strerror}", "parse")],
        )


def ingest_bytes(engine: Engine, name: str, data: bytes, **options: Any) -> FileResult:
    """An uploaded file; a tracker's binary file (an event file, an mlflow.db) is read as its path is."""
    with uploaded_store(name, data) as path:
        reader = path_reader(path, options.get("fmt_name")) if path is not None else None
        if path is not None and isinstance(reader, TrackerReader):
            return ingest_store(engine, str(path), reader, label=name, **options)
    return ingest_source(engine, name, lambda: io.BytesIO(data), **options)


def preview_bytes(
    engine: Engine, name: str, data: bytes, fmt_name: str | None = None, link: LinkOptions | None = None
) -> Preview:
    with uploaded_store(name, data) as path:
        reader = path_reader(path, fmt_name) if path is not None else None
        if path is not None and isinstance(reader, TrackerReader):
            spool = Spool()
            try:
                return _preview(engine, _read_store(reader, str(path), link, spool, name), link)
            finally:
                spool.close()
    return preview_source(engine, name, lambda: io.BytesIO(data), fmt_name=fmt_name, link=link)


def load_records(
    engine: Engine,
    name: str,
    fmt: Format,
    records: Iterable[Located],
    *,
    link: LinkOptions | None = None,
    after: Callable[[Session, FileResult], None] | None = None,
) -> FileResult:
    """Store records made in memory (a live scrape's window, named by its source) as one batch: no
    file is recorded, and a batch stored before changes nothing (its records are already there)."""
    return load_file(engine, Parsed(name, fmt, list(records), []), link=link, after=after)
