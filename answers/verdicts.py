"""One verdict per benchmark: which prediction judges it (VERDICT_ORDER), whether that is an alert and why,
and how its alert's investigation moves when the verdict changes (settle_alert).

The verdict lives on the benchmark's alert row with the investigation (status, note, history); changing
prediction source never opens a second alert. When a refresh stops raising an alert under investigation
(a calibration now explains its gap), the alert is resolved with a history entry saying why."""

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from specdash.costmodel import Diagnosis, judge
from specdash.costmodel.collapse import COLLAPSE_CODE, COLLAPSE_SEVERITY
from specdash.costmodel.domain import ACTIVE_STATUSES, GapStatus, PredictionSource
from specdash.rows import AlertValues, PredictionKey

# Which prediction judges a benchmark, best first: the deployment's active calibration, else an external
# prediction (by name), else first-principles theory. The others stay visible as analysis.
VERDICT_ORDER = (PredictionSource.CALIBRATED, "external", PredictionSource.THEORY)
REFRESH_WHO = "specdash refresh"


def verdict_rank(source: str) -> tuple[int, str]:
    kind = source if source in (PredictionSource.CALIBRATED, PredictionSource.THEORY) else "external"
    return VERDICT_ORDER.index(kind), source


@dataclass(slots=True)
class Candidate:
    """One prediction's judgement of a benchmark (the prediction of the benchmark's group from `source`),
    before the best one is chosen."""

    source: str
    gap: float
    threshold: float
    band: float | None
    diagnoses: list[Diagnosis]
    acceptance_factor: float | None
    accept_length_source: str | None
    version: int | None  # the parameter set's, for the history text


class BenchmarkVerdict(NamedTuple):
    """A benchmark's verdict against its best candidate: that prediction's key and source, and the verdict."""

    key: PredictionKey
    source: str
    is_alert: bool
    severity: str | None
    code: str | None
    reason: str


class StatusChange(NamedTuple):
    """A history entry of an alert whose status a refresh moved."""

    from_status: str
    to_status: str
    note: str | None


class AlertChange(NamedTuple):
    """What a verdict makes of a benchmark's alert: its values, the status change, and whether the verdict
    newly raises it."""

    values: AlertValues
    event: StatusChange | None
    raised: bool


def best_verdict(key: PredictionKey, candidates: list[Candidate]) -> BenchmarkVerdict:
    """The verdict of a benchmark of group `key` by its best candidate (VERDICT_ORDER)."""
    best = candidates[0] if len(candidates) == 1 else min(candidates, key=lambda c: verdict_rank(c.source))
    verdict = judge(
        best.gap,
        best.threshold,
        best.band,
        best.diagnoses,
        best.acceptance_factor,
        best.accept_length_source,
    )
    reason = f"against the {_source_text(best)} prediction: {verdict.reason}"
    return BenchmarkVerdict(key, best.source, verdict.is_alert, verdict.severity, verdict.code, reason)


def settle_alert(
    stored: AlertValues | None,
    verdict: BenchmarkVerdict,
    gap_id: int | None,
    source_of_gap: Callable[[int], str | None],
    superseded: bool,
) -> AlertChange:
    """The benchmark's alert after this verdict (judged on gap `gap_id`). A new alert opens; a stored one
    keeps its investigation unless the change decides it: an alert that no longer holds is resolved, one
    raised again after it was resolved opens again (not for a superseded benchmark). A live window's
    acceptance collapse outranks the gap. `source_of_gap` names the prediction the stored verdict was on."""
    values: tuple[int | None, bool, str | None, str | None, str | None] = (
        gap_id,
        verdict.is_alert,
        verdict.severity,
        verdict.code,
        verdict.reason,
    )
    if stored is not None and stored.code == COLLAPSE_CODE:
        # a live window's acceptance collapse outranks its gap (db/acceptance_alerts.py)
        values = (gap_id, True, COLLAPSE_SEVERITY, COLLAPSE_CODE, stored.reason)
    if stored is None:
        return AlertChange(AlertValues(*values, GapStatus.OPEN, None), None, verdict.is_alert)
    if values == stored[:5]:
        return AlertChange(stored, None, False)
    status, note, reason, raised = stored.status, stored.note, values[4], False
    if stored.is_alert and not verdict.is_alert and status in ACTIVE_STATUSES:
        old_source = source_of_gap(stored.gap_id) if stored.gap_id is not None else None
        why = (
            f"the {verdict.source} prediction supersedes the {old_source} one"
            if old_source and old_source != verdict.source
            else "its prediction changed"
        )
        status, note = GapStatus.RESOLVED, f"no longer an alert: {why}; {reason}"
    elif not stored.is_alert and verdict.is_alert:
        raised = True
        if status == GapStatus.RESOLVED and not superseded:
            status, note = GapStatus.OPEN, f"raised again: {reason}"
    event = StatusChange(stored.status, status, note) if status != stored.status else None
    return AlertChange(AlertValues(*values, status, note), event, raised)


def _source_text(candidate: Candidate) -> str:
    if candidate.source == PredictionSource.CALIBRATED and candidate.version is not None:
        return f"calibrated (parameter set v{candidate.version})"
    return candidate.source
