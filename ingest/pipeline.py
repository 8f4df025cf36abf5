"""Ingest one file (from disk or from the upload page): hash, detect, parse, validate, store, refresh gaps.

Everything from one file is written in one transaction; a file with problems writes nothing unless
`skip_invalid` is set, and a file already ingested (same sha256) is skipped."""

import hashlib
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import Engine, select, update

from specdash.db.engine import transaction
from specdash.db.models import Benchmark, IngestedFile
from specdash.db.refresh import RefreshSummary, refresh
from specdash.ingest.formats import BY_NAME, Format, Located, detect_format
from specdash.ingest.problems import Problem
from specdash.ingest.store import LinkError, LinkOptions, Store, StoreSummary

HEAD_BYTES = 64 * 1024
CHUNK_BYTES = 1024 * 1024

Progress = Callable[[int], None]


@dataclass
class FileResult:
    path: str
    status: str  # loaded | skipped | failed
    format: str | None = None
    sha256: str | None = None
    store: StoreSummary | None = None
    refresh: RefreshSummary | None = None
    problems: list[Problem] = field(default_factory=list)
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "failed"


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
    with opener() as stream:
        head = stream.read(HEAD_BYTES)
    if fmt_name:
        if fmt_name not in BY_NAME:
            return Problem(name, None, None, f"unknown format {fmt_name!r}; see 'specdash formats'", "parse")
        return BY_NAME[fmt_name]
    if not head.strip():
        return Problem(name, None, None, "file is empty", "parse")
    if b"\x00" in head:
        return Problem(name, None, None, "binary file, not a text format specdash reads", "parse")
    fmt = detect_format(head.decode("utf-8", errors="replace"), name)
    if fmt is None:
        return Problem(
            name, None, None, "format not recognised; pass --format (see 'specdash formats')", "parse"
        )
    return fmt


def ingest_source(
    engine: Engine,
    name: str,
    opener: Callable[[], BinaryIO],
    *,
    fmt_name: str | None = None,
    skip_invalid: bool = False,
    link: LinkOptions | None = None,
    progress: Progress | None = None,
) -> FileResult:
    digest = sha256_of(opener)
    with transaction(engine, write=False) as session:
        seen = session.scalar(select(IngestedFile).where(IngestedFile.sha256 == digest))
        if seen is not None:
            return FileResult(
                name, "skipped", seen.format, digest, message=f"already ingested as {seen.path}"
            )
    fmt = _detect(opener, name, fmt_name)
    if isinstance(fmt, Problem):
        return FileResult(name, "failed", None, digest, problems=[fmt])

    result = FileResult(name, "loaded", fmt.name, digest)
    try:
        with transaction(engine) as session:
            store = Store(session, link)
            size = 0
            with opener() as raw:
                counting = _CountingReader(raw, progress)
                text = io.TextIOWrapper(io.BufferedReader(counting, CHUNK_BYTES), encoding="utf-8")
                try:
                    for item in fmt.parse(text, name):
                        if isinstance(item, Problem):
                            result.problems.append(item)
                            continue
                        _add(store, item, name, result.problems)
                except UnicodeDecodeError as exc:
                    result.problems.append(Problem(name, None, None, f"not UTF-8 text: {exc.reason}", "parse"))
                size = raw.tell() if raw.seekable() else 0
            summary = store.finish()
            if summary.records == 0 and not result.problems:
                result.problems.append(Problem(name, None, None, "no records found", "parse"))
            if result.problems and (not skip_invalid or summary.records == 0):
                raise _Rollback
            ingested = IngestedFile(
                sha256=digest, path=name, format=fmt.name, size_bytes=size, records=summary.records
            )
            session.add(ingested)
            session.flush()
            if summary.benchmark_ids:
                session.execute(
                    update(Benchmark)
                    .where(Benchmark.id.in_(summary.benchmark_ids))
                    .values(ingested_file_id=ingested.id)
                )
            # Benchmarks alone change only their own gaps; profiles, checkpoints and predictions can
            # change any.
            only_benchmarks = set(summary.created) <= {"benchmark", "deployment"} and not summary.updated
            result.refresh = refresh(session, summary.benchmark_ids if only_benchmarks else None)
            result.store = summary
    except _Rollback:
        result.status = "failed"
        result.store = None
    return result


def _add(store: Store, item: Located, name: str, problems: list[Problem]) -> None:
    try:
        store.add(item.record)
    except LinkError as exc:
        problems.append(Problem(name, item.line, exc.field, str(exc)))


def ingest_path(engine: Engine, path: str | Path, **options) -> FileResult:
    path = Path(path)
    return ingest_source(engine, str(path), lambda: open(path, "rb"), **options)


def ingest_bytes(engine: Engine, name: str, data: bytes, **options) -> FileResult:
    return ingest_source(engine, name, lambda: io.BytesIO(data), **options)


def describe(result: FileResult) -> str:
    """One paragraph on what happened to a file, the same in the CLI and the upload page."""
    if result.status == "skipped":
        return f"{result.path}: skipped, {result.message} (sha256 {result.sha256[:12]})"
    if result.status == "failed":
        return f"{result.path}: nothing written ({len(result.problems)} problem(s))"
    s, r = result.store, result.refresh
    created = ", ".join(f"{n} {k}(s)" for k, n in sorted(s.created.items())) or "nothing new"
    parts = [f"{result.path}: {s.records} record(s) as {result.format}; created {created}"]
    if s.metric_points:
        parts.append(f"{s.metric_points} metric point(s)")
    if s.linked or s.unlinked:
        parts.append(f"{s.linked} benchmark(s) linked to a checkpoint, {s.unlinked} not linked")
    if s.duplicates:
        parts.append(f"{s.duplicates} duplicate record(s) skipped")
    if result.problems:
        parts.append(f"{len(result.problems)} invalid record(s) skipped")
    if r is not None:
        parts.append(f"{r.predictions} prediction(s) refreshed, {r.new_alerts} new alert(s)")
    return "; ".join(parts) + "."
