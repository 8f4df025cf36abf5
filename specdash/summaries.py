"""What a refresh did, counted for the ingest, page or command that asked for it: the predictions and gaps
(answers/refresh.py) and the depth advisories (answers/advisories.py). Plain counts that import nothing, so
that a load with nothing to refresh or advise (an ingest of training metrics) loads neither."""

from dataclasses import dataclass, field


@dataclass
class RefreshSummary:
    """What a refresh of predictions, gaps and verdicts did."""

    benchmarks: int = 0
    predictions: int = 0
    gaps: int = 0
    new_alerts: int = 0
    skipped: int = 0
    # the deployments (names) whose load model was fitted again for this refresh (answers/estimates.py)
    refitted: list[str] = field(default_factory=list)


@dataclass
class AdvisorySummary:
    """What a refresh of depth advice did."""

    runs: int = 0
    advised: int = 0  # advisories that hold now
    new: list[int] = field(default_factory=list)  # ids of advisories raised or reopened by this refresh
    resolved: int = 0
