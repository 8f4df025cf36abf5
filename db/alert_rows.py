"""The rows the alert queries return (db/alerts.py): triage groups, one benchmark's gap to each prediction
source, muted diagnoses and the reruns that could supersede a benchmark."""

from datetime import datetime
from typing import NamedTuple


class AlertGroup(NamedTuple):
    """Alerts of one deployment, run or leading diagnosis, counted in all and per diagnosis severity."""

    group: str  # "(none)" for alerts without one (a diagnosis-less verdict)
    alerts: int
    critical: int
    warning: int
    info: int


class SourceGap(NamedTuple):
    """A benchmark's gap to one prediction source (analysis); `verdict` marks the source that judges it."""

    gap_id: int
    source: str
    predicted_tps: float
    gap: float  # 1 - measured / predicted tok/s
    predicted_accept_length: float | None  # tokens per round
    severity: str | None
    diagnoses: str  # the diagnosis codes, comma-separated
    verdict: bool


class MutedDiagnosis(NamedTuple):
    """A diagnosis muted on a deployment, with who and why, and how many alerts it hides now."""

    id: int
    deployment: str
    diagnosis: str
    reason: str
    who: str
    created_at: datetime
    lifted_at: datetime | None
    lifted_by: str | None
    alerts: int


class RerunCandidate(NamedTuple):
    """Another benchmark of the same checkpoint that could supersede one (its rerun), with its setting."""

    benchmark_id: int
    deployment: str
    speculative_algorithm: str | None
    num_steps: int | None
    topk: int | None
    num_draft_tokens: int | None
    concurrency: int
    dataset: str | None
    decode_tps: float
    accept_length: float | None  # tokens per round incl. the bonus token
    label: str | None
