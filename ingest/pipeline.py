"""The one ingest pipeline: ingest(engine, source, policy) reads a source, validates its records, claims it
(ingested already? replaced?), stores it, records it, refreshes what it touched and re-advises its runs, in
one transaction. `specdash ingest`, the Upload page and its preview, a followed log's chunks and a live
scrape's windows all go through it. A source is read first (ingest/sources.py) with no lock held; only then
is the write lock taken. A training log is the exception: it is stored as it is read, inside its
transaction (ingest/streamed.py), and a problem rolls back what it stored. A preview is the same pipeline
rolled back before it commits; a refusal is a result, as a skip is."""

from dataclasses import replace
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, delete, select
from sqlalchemy.orm import Session

from specdash.db.changes import current_who, record_change
from specdash.db.engine import file_transaction, transaction
from specdash.db.models import Benchmark, IngestedFile
from specdash.db.records import PATH_CHARS
from specdash.ingest.formats.base import Format
from specdash.ingest.policy import COMMIT, IngestPolicy, Mode, OnConflict, OnInvalid
from specdash.ingest.problems import Problem
from specdash.ingest.read import Spool
from specdash.ingest.results import IngestResult, Preview
from specdash.ingest.rules import FileRules
from specdash.ingest.sources import Read, Source
from specdash.ingest.store import Store, store_records
from specdash.ingest.store_summary import StoreSummary
from specdash.summaries import AdvisorySummary, RefreshSummary


def ingest(engine: Engine, source: Source, policy: IngestPolicy = COMMIT) -> IngestResult:
    """Read `source`, then store it in one transaction under `policy`: skipped when ingested already
    (unless REPLACE), refused as a whole when its problems refuse it (nothing written), or stored; in
    PREVIEW, everything it would do is in the result's `preview` and nothing is written."""
    committing = policy.mode is Mode.COMMIT
    digest = source.digest(policy)
    if committing and digest is not None and policy.on_conflict is not OnConflict.REPLACE:
        with transaction(engine, write=False) as session:
            seen = already_ingested(session, digest)
        if seen is not None:
            return _skipped(source.name, seen, digest)
    spool = Spool()
    try:
        # Everything that reads the source happens here, before the write lock is asked for.
        read = source.read(policy, spool, stream=committing)
        result = _validated(read, policy)
        if result is None:
            result = _load(engine, source, read, policy)
        if result is None:  # a training log went back to a step it logged: read it again, spooled
            read = source.read(policy, spool, stream=False)
            result = _validated(read, policy) or _load(engine, source, read, policy)
        assert result is not None  # a spooled read is stored or refused
        return result
    finally:
        spool.close()


def preview_ingest(engine: Engine, source: Source, policy: IngestPolicy = COMMIT) -> Preview:
    """What ingesting `source` under `policy` would do, nothing written: the pipeline in Mode.PREVIEW."""
    result = ingest(engine, source, replace(policy, mode=Mode.PREVIEW))
    assert result.preview is not None  # a preview's result holds it, readable or not
    return result.preview


def _skipped(name: str, seen: IngestedFile, digest: str) -> IngestResult:
    return IngestResult(name, "skipped", seen.format, digest, message=f"already ingested as {seen.path}")


def _validated(read: Read, policy: IngestPolicy) -> IngestResult | None:
    """The refusal of a source whose problems are known before anything is stored (one nothing could
    read, or whose problems refuse it); None when it is to be stored."""
    if read.fmt is None:
        preview = None
        if policy.mode is Mode.PREVIEW:
            preview = Preview(read.name, None, read.sha256 or "", None, read.problems, None, None)
        return IngestResult(read.name, "failed", None, read.sha256, problems=read.problems, preview=preview)
    known = read.count is not None  # a log stored as it is read tells its problems as it is stored
    if policy.mode is Mode.COMMIT and known and read.problems and _refuses(policy, read.count or 0):
        return IngestResult(read.name, "failed", read.fmt.name, read.sha256, problems=read.problems)
    return None


def _refuses(policy: IngestPolicy, records: int) -> bool:
    """Whether problems refuse a batch of `records` valid records (a preview shows the valid ones)."""
    if policy.mode is Mode.PREVIEW or policy.on_invalid is OnInvalid.KEEP:
        return False
    return policy.on_invalid is OnInvalid.REFUSE or records == 0


def _load(engine: Engine, source: Source, read: Read, policy: IngestPolicy) -> IngestResult | None:
    """Store `read` in one transaction: claimed, stored, recorded, refreshed and advised, then the
    source's own keep(session, result), all committed together; rolled back when refused or a preview.
    None when a log stored as it is read resumed (rolled back, to be read again spooled)."""
    fmt = read.fmt
    assert fmt is not None  # validated: a source nothing read is refused before
    committing = policy.mode is Mode.COMMIT
    result = IngestResult(read.name, "loaded", fmt.name, read.sha256, problems=read.problems)
    with file_transaction(engine, fmt.bulk_points) as session:
        ingested, replaced = None, False
        if committing and read.sha256 is not None:
            seen = _claim(session, read.sha256, policy.on_conflict)
            if isinstance(seen, IngestedFile):
                return _skipped(read.name, seen, read.sha256)
            result.message, replaced = seen or "", seen is not None
            ingested = _open_file(session, read, fmt)
        store = _store(session, read, fmt, policy, result, ingested.id if ingested else None)
        if read.streamed is not None and read.streamed.resumed:
            session.rollback()
            return None
        refusal = _refusal(read, policy, store.summary)
        if refusal is not None:
            session.rollback()
            result.status, result.store, result.problems = "failed", None, refusal
            return result
        if ingested is not None:
            _record_file(session, ingested, read, store.summary)
        if store.summary.benchmark_ids or committing:  # a preview shows the file's own benchmarks
            result.refresh = _refresh(session, store.summary, replaced=replaced)
        if not committing:
            result.preview = _preview(session, read, result)
            session.rollback()
            return result
        result.advisories = _advise(session, store)
        source.keep(session, result)
    return result


def _store(
    session: Session, read: Read, fmt: Format, policy: IngestPolicy, result: IngestResult, file_id: int | None
) -> Store:
    rules = FileRules(read.name, fmt, read.problems)  # every format, no exception
    conflict = policy.on_conflict
    store = store_records(
        session,
        fmt.name,
        read.name,
        rules.apply(read.records, read.records.repeated if isinstance(read.records, Spool) else None),
        policy.link,
        read.problems,
        update=conflict.applies_values,
        action=conflict.action,
        ingested_file_id=file_id,
    )
    result.store = store.summary
    result.message = "; ".join(filter(None, [result.message, *rules.notes, read.skipped]))
    if read.streamed is not None:  # its parse problems first, as a spooled read lists them
        read.size_bytes = read.streamed.size_bytes or 0
        result.problems = read.streamed.problems + read.problems
    return store


def _refusal(read: Read, policy: IngestPolicy, summary: StoreSummary) -> list[Problem] | None:
    """The problems that refuse what was stored (it rolls back), or None."""
    if read.streamed is not None and policy.mode is Mode.COMMIT:
        unreadable = read.streamed.unreadable()  # what a spooled read would have refused before storing
        if unreadable:
            return unreadable
    if read.problems and _refuses(policy, summary.records):
        return read.streamed.problems + read.problems if read.streamed is not None else read.problems
    return None


def _claim(session: Session, digest: str, on_conflict: OnConflict) -> IngestedFile | str | None:
    """The earlier ingest of the same source when it is to be skipped (another process may have loaded
    it while this one waited for the write lock); with REPLACE, that ingest is removed and what was
    removed is said; None when it was never ingested."""
    seen = already_ingested(session, digest)
    if seen is None or on_conflict is not OnConflict.REPLACE:
        return seen
    message = _remove_ingest(session, seen)
    record_change(session, on_conflict.action, "file", seen.path, note=message)
    return message


def already_ingested(session: Session, digest: str) -> IngestedFile | None:
    return session.scalar(select(IngestedFile).where(IngestedFile.sha256 == digest))


def _open_file(session: Session, read: Read, fmt: Format) -> IngestedFile:
    """The file's row, made before its benchmarks so that each is inserted with it (an UPDATE of every
    benchmark afterwards cost 5 s of 40 at 100,000 on PostgreSQL); it rolls back with them if refused."""
    assert read.sha256 is not None
    ingested = IngestedFile(
        sha256=read.sha256,
        path=read.name[-PATH_CHARS:],
        format=fmt.name,
        size_bytes=read.size_bytes,
        records=0,
        ingested_by=current_who(),
    )
    session.add(ingested)
    session.flush()
    return ingested


def _record_file(session: Session, ingested: IngestedFile, read: Read, summary: StoreSummary) -> None:
    """What the file held, once it is stored (a log read as it is stored knows its size only then)."""
    ingested.size_bytes = read.size_bytes
    ingested.records = summary.records
    session.flush()


def _remove_ingest(session: Session, ingested: IngestedFile) -> str:
    """Remove the benchmarks an earlier ingest stored (their gaps and history go with them) and its record;
    the Leaderboard's entries of their checkpoints are rewritten without them."""
    from specdash.db import leaderboard_entries, loadmodels, parity_counts
    from specdash.db.runs import file_checkpoints

    checkpoints = file_checkpoints(session, ingested.id)
    benchmark_ids = select(Benchmark.id).where(Benchmark.ingested_file_id == ingested.id)
    # their gaps go by the cascade, and the benchmarks they superseded are superseded no more
    parity_counts.deleting_benchmarks(session, benchmark_ids)
    deleted = session.execute(delete(Benchmark).where(Benchmark.ingested_file_id == ingested.id))
    loadmodels.recheck_fits(session)  # a load fit's data may have lost benchmarks
    removed = cast(CursorResult[Any], deleted).rowcount
    session.delete(ingested)
    session.flush()
    leaderboard_entries.update(session, checkpoints)
    return f"replaced the earlier ingest of {ingested.path} ({removed} benchmark(s) removed)"


def _refresh(session: Session, summary: StoreSummary, replaced: bool) -> RefreshSummary:
    # New benchmarks change only their own gaps (and, for a baseline, those on its deployment);
    # changed profiles, acceptance or external predictions can change any.
    everything = bool(summary.updated) or summary.created["prediction"] or summary.acceptance_changed
    if not everything and not summary.benchmark_ids:
        return RefreshSummary()  # nothing in scope (a file of training metrics): the refresh not even loaded
    if summary.updated or summary.acceptance_changed:
        from specdash.db.loadmodels import recheck_fits

        recheck_fits(session)  # a drafter's family or the rates its accept lengths are chained from changed
    from specdash.answers.refresh import refresh

    # the Leaderboard's entries are computed from benchmarks, external predictions and profiles: a file
    # that changed any of them has every entry ranked again (a refresh of all ranks only what it wrote)
    changed = summary.benchmark_ids or summary.updated or summary.created["prediction"]
    # the file's benchmarks are new rows, unless it replaced an earlier ingest (whose removed benchmarks
    # were earlier ones of some drafters' series)
    return refresh(
        session,
        None if everything else summary.benchmark_ids,
        rank_all=bool(changed),
        appended=not replaced,
    )


def _advise(session: Session, store: Store) -> AdvisorySummary:
    # New benchmarks (baselines, loads) and deployments can change any run's advice; metrics only their run's.
    summary = store.summary
    everything = summary.benchmark_ids or summary.created["deployment"] or summary.updated["deployment"]
    if not everything and not store.advisable:
        return AdvisorySummary()  # no run of the file's has a trained depth: the advice not even loaded
    from specdash.answers.advisories import refresh_advisories

    return refresh_advisories(session, None if everything else store.run_ids)


def _preview(session: Session, read: Read, result: IngestResult) -> Preview:
    """What committing would do, read in the transaction about to roll back: the stored summary, the
    refresh, the gaps the file's benchmarks would have, and whether it was ingested already."""
    from specdash.db.gaps import benchmark_gap_rows

    seen = already_ingested(session, read.sha256) if read.sha256 else None
    preview = Preview(
        read.name,
        result.format,
        read.sha256 or "",
        seen.path if seen is not None else None,
        result.problems,
        result.store,
        result.refresh,
        notes=result.message or None,
    )
    if result.store is not None:
        preview.gaps = benchmark_gap_rows(session, result.store.benchmark_ids)
    return preview
