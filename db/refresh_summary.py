"""What a refresh did, apart from the refresh (db/refresh.py) so that a load with nothing to refresh
(an ingest of training metrics) need not import the predictions, gaps and verdicts."""

from dataclasses import dataclass


@dataclass
class RefreshSummary:
    benchmarks: int = 0
    predictions: int = 0
    gaps: int = 0
    new_alerts: int = 0
    skipped: int = 0
