"""What an ingest gives (ingest/pipeline.py): a source's result and, for a preview, what committing it
would do."""

from dataclasses import dataclass, field
from typing import Any

from specdash.ingest.problems import Problem
from specdash.ingest.store_summary import BenchmarkLink, StoreSummary
from specdash.summaries import AdvisorySummary, RefreshSummary

__all__ = ["IngestResult", "Preview"]


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
class IngestResult:
    """What ingesting a source did (or, in a preview, would do: `preview` holds it)."""

    path: str
    status: str  # loaded | skipped | failed
    format: str | None = None
    sha256: str | None = None
    store: StoreSummary | None = None
    refresh: RefreshSummary | None = None
    advisories: AdvisorySummary | None = None
    problems: list[Problem] = field(default_factory=list)
    message: str = ""
    preview: Preview | None = None  # Mode.PREVIEW: what committing would do, nothing written

    @property
    def ok(self) -> bool:
        return self.status != "failed"
