"""What happened to a file, in words: the paragraph `specdash ingest` prints and the Upload page shows for
each file, and the closing line of a multi-file ingest."""

from collections import Counter

from specdash.ingest.results import IngestResult
from specdash.ingest.store_summary import StoreSummary

MAX_LINKS_SHOWN = 5
MAX_INTERVAL_NOTES = 12


def describe_links(summary: StoreSummary) -> str:
    """'run7/epoch_2 by path (2), baseline (1)': where a file's benchmarks went, most frequent first."""
    counts = Counter({kind: n for kind, n in summary.link_counts.items() if kind != "duplicate"})
    shown = [f"{what} ({n})" for what, n in counts.most_common(MAX_LINKS_SHOWN)]
    if len(counts) > MAX_LINKS_SHOWN:
        shown.append(f"{len(counts) - MAX_LINKS_SHOWN} more")
    return ", ".join(shown)


def describe(result: IngestResult) -> str:
    """One paragraph on what happened to a file, the same in the CLI and the upload page."""
    if result.status == "skipped":
        return f"{result.path}: skipped, {result.message} (sha256 {(result.sha256 or '')[:12]})"
    if result.status == "failed":
        return f"{result.path}: nothing written ({len(result.problems)} problem(s))"
    s, r = result.store, result.refresh
    assert s is not None  # a loaded file's records were stored
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
        if r.refitted:
            parts.append(f"load model refitted for {', '.join(r.refitted)}")
    if result.advisories is not None and result.advisories.new:
        parts.append(f"{len(result.advisories.new)} new advisory(ies) (see 'specdash advisories')")
    return "; ".join(parts) + "."


def describe_new_names(result: IngestResult) -> str | None:
    """The names a file's benchmarks created, unlike any stored (a line of its own: each worth a look for
    a typo); None when there are none."""
    if result.status != "loaded" or result.store is None or not result.store.new_names:
        return None
    return f"  new name(s), unlike any stored: {', '.join(result.store.new_names)}"


def describe_totals(results: list[IngestResult]) -> str:
    """The closing paragraph of a multi-file ingest: files, records, what was linked and created."""
    loaded = [r for r in results if r.status == "loaded"]
    stores = [r.store for r in loaded if r.store is not None]
    created: Counter[str] = Counter()
    for store in stores:
        created.update(store.created)
    status = Counter(r.status for r in results)
    parts = [
        f"{len(results)} file(s): {status['loaded']} loaded, {status['skipped']} skipped, {status['failed']} failed",
        f"{sum(s.records for s in stores)} record(s)",
        f"created {', '.join(f'{n} {k}(s)' for k, n in sorted(created.items())) or 'nothing new'}",
        f"{sum(s.linked for s in stores)} benchmark(s) linked, {sum(s.unlinked for s in stores)} not linked",
        f"{sum(s.duplicates for s in stores)} duplicate(s) skipped",
        f"{sum(r.refresh.new_alerts for r in loaded if r.refresh)} new alert(s)",
    ]
    return "; ".join(parts) + "."
