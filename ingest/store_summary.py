"""What storing a file's records did: counts by kind, and where each benchmark went (BenchmarkLink); the
numbers ingest/describe.py puts in words."""

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class BenchmarkLink:
    """Where one benchmark of a file went: its deployment and, unless a baseline, its checkpoint."""

    line: int | None
    deployment: str
    run: str | None = None
    checkpoint: str | None = None
    how: str = "baseline"  # baseline | by name | by path | by folder names | created from path | unlinked
    duplicate: bool = False
    label: str | None = None
    intervals: str | None = None  # a server log's benchmark: the intervals it used and left out, and why
    derived: str | None = None  # a client benchmark: which fields gave per-request decode and concurrency

    def kind(self) -> str:
        """What a summary counts it as: 'baseline', 'run/checkpoint by path', 'not linked', 'duplicate'."""
        return "duplicate" if self.duplicate else link_kind(self.how, self.run, self.checkpoint)


def link_kind(how: str, run: str | None, checkpoint: str | None) -> str:
    """What a summary counts a benchmark that is not a duplicate as (BenchmarkLink.kind), from how it was
    linked and the run and checkpoint it went to."""
    if how in ("baseline", "target's own head"):
        return how
    return f"{run}/{checkpoint} {how}" if run else "not linked"


@dataclass
class StoreSummary:
    records: int = 0
    created: Counter = field(default_factory=Counter)
    updated: Counter = field(default_factory=Counter)  # rows given values: filled in, or replaced
    replaced: int = 0  # stored values the file's replaced (--update), each in the change history
    duplicates: int = 0
    linked: int = 0
    unlinked: int = 0
    metric_points: int = 0  # stored
    points_kept: int = 0  # offered but already stored (same run, key and step): the stored value kept
    links: list[BenchmarkLink] = field(default_factory=list)  # the first MAX_LINKS_KEPT
    link_counts: Counter = field(default_factory=Counter)  # every benchmark, by BenchmarkLink.kind()
    benchmark_ids: list[int] = field(default_factory=list)
    derived_acceptance: int = 0  # checkpoints whose per-position acceptance came from training metrics
    acceptance_changed: int = 0  # checkpoints whose per-position acceptance was set or changed
    new_names: list[str] = field(default_factory=list)  # benchmarks' names unlike any stored: "run 'x'"
