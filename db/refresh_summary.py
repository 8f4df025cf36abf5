"""What a refresh did, apart from the refresh (answers/refresh.py) so that a load with nothing to refresh
(an ingest of training metrics) need not import the predictions, gaps and verdicts."""

from dataclasses import dataclass, field


@dataclass
class RefreshSummary:
    benchmarks: int = 0
    predictions: int = 0
    gaps: int = 0
    new_alerts: int = 0
    skipped: int = 0
    # the deployments (names) whose load model was fitted again for this refresh (db/loadmodels.py)
    refitted: list[str] = field(default_factory=list)
