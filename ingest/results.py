"""What loading a file gives (ingest/load.py): a file's result, a dry run's preview, and the records read
and validated waiting for the write lock."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from specdash.answers.advice import AdvisorySummary
from specdash.db.refresh_summary import RefreshSummary
from specdash.ingest.formats.base import Format, Located
from specdash.ingest.problems import Problem
from specdash.ingest.store_summary import BenchmarkLink, StoreSummary

__all__ = ["FileResult", "Parsed", "Preview"]


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
    gaps: list[dict[str, Any]] = field(
        default_factory=list
    )  # benchmark line, prediction source, gap, severity
    # what the rules did that the summary says: repeat groups kept, where a training log resumed
    notes: str | None = None

    @property
    def ok(self) -> bool:
        return self.format is not None and not any(p.kind == "parse" for p in self.problems)

    @property
    def links(self) -> list[BenchmarkLink]:
        return self.store.links if self.store else []


@dataclass
class Parsed:
    """Records read and validated, waiting for the write lock: a whole file (with its sha256 and size,
    recorded as an ingested file) or a chunk of a followed log (sha256 None: its offset says what was read)."""

    name: str
    fmt: Format
    records: Iterable[Located]
    problems: list[Problem]
    sha256: str | None = None
    size_bytes: int = 0
