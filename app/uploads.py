"""What the Upload page shows about a file before saving it, read from the ingest's preview
(ingest/pipeline.py in Mode.PREVIEW: the whole ingest, rolled back): plain functions of a Preview, testable
without Streamlit."""

import pandas as pd

from specdash.ingest.problems import format_report
from specdash.ingest.results import Preview


def can_save(preview: Preview) -> bool:
    """Whether saving would store anything: a recognised format, no problem at all (a file with any problem
    writes nothing), some records, and not a file stored before."""
    return (
        preview.ok
        and not preview.problems
        and preview.store is not None
        and preview.store.records > 0
        and preview.already_ingested is None
    )


def report(preview: Preview) -> str:
    """The validation report, the same text `specdash ingest` prints."""
    return format_report(preview.problems)


def look_alike(preview: Preview) -> bool:
    """Whether a problem is a name refused for looking like a stored one (ingest/rules/names.py)."""
    return any("did you mean" in problem.message for problem in preview.problems)


def would_create(preview: Preview) -> str:
    """`1 benchmark, 1 deployment; 1 duplicate skipped`: what saving would add."""
    if preview.store is None:
        return "nothing"
    s = preview.store
    parts = [", ".join(f"{n} {kind}" for kind, n in sorted(s.created.items())) or "nothing new"]
    if s.metric_points:
        parts.append(f"{s.metric_points:,} metric points")
    if s.duplicates:
        parts.append(f"{s.duplicates} duplicate(s) already stored")
    return "; ".join(parts)


def links_frame(preview: Preview) -> pd.DataFrame:
    """Where each benchmark of the file would go: its line, deployment, run/checkpoint and how it matched."""
    return pd.DataFrame(
        [
            {
                "line": link.line,
                "deployment": link.deployment,
                "run": link.run,
                "checkpoint": link.checkpoint,
                "matched": "already stored" if link.duplicate else link.how,
                # a log's benchmark: intervals used and left out; a client's: fields a figure was derived from
                "notes": link.intervals or link.derived or "",
            }
            for link in preview.links
        ],
        columns=["line", "deployment", "run", "checkpoint", "matched", "notes"],
    )


def gaps_frame(preview: Preview) -> pd.DataFrame:
    """The gaps the new benchmarks would have against their predictions."""
    return pd.DataFrame(
        [
            {
                "measured tok/s": g["measured_tps"],
                "predicted tok/s": g["predicted_tps"],
                "gap": g["gap"],
                "severity": g["severity"],
                "diagnoses": ", ".join(g["diagnoses"]),
            }
            for g in preview.gaps
        ],
        columns=["measured tok/s", "predicted tok/s", "gap", "severity", "diagnoses"],
    )
