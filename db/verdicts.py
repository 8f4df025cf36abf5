"""One verdict per benchmark, raised by refresh: which prediction judges it (VERDICT_ORDER) and whether
that is an alert and why.

The verdict lives on the benchmark's alert row with the investigation (status, note, history); changing
prediction source never opens a second alert. When a refresh stops raising an alert under investigation
(a calibration now explains its gap), the alert is resolved with a history entry saying why."""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from specdash.costmodel import Diagnosis, Verdict, judge
from specdash.costmodel.collapse import COLLAPSE_CODE, COLLAPSE_SEVERITY
from specdash.costmodel.domain import GapStatus, PredictionSource
from specdash.db.bulk import insert_rows, select_in, update_rows
from specdash.db.models import ACTIVE_STATUSES, Alert, AlertEvent, Benchmark

# Which prediction judges a benchmark, best first: the deployment's active calibration, else an external
# prediction (by name), else first-principles theory. The others stay visible as analysis.
VERDICT_ORDER = (PredictionSource.CALIBRATED, "external", PredictionSource.THEORY)
REFRESH_WHO = "specdash refresh"
# The verdict's columns of an alert, compared before rewriting.
VERDICT_COLUMNS = ("gap_id", "is_alert", "severity", "code", "reason")
# where a stored alert's code is in the rows _alerts reads (by index: a Row's field by name costs more,
# and it is read for every benchmark)
_CODE_AT = 1 + VERDICT_COLUMNS.index("code")


def verdict_rank(source: str) -> tuple[int, str]:
    kind = source if source in (PredictionSource.CALIBRATED, PredictionSource.THEORY) else "external"
    return VERDICT_ORDER.index(kind), source


@dataclass(slots=True)
class Candidate:
    """One prediction's judgement of a benchmark, before the best one is chosen."""

    source: str
    prediction_id: int
    gap: float
    threshold: float
    band: float | None
    diagnoses: list[Diagnosis]
    acceptance_factor: float | None
    accept_length_source: str | None
    version: int | None  # the parameter set's, for the history text


@dataclass
class _Writes:
    """The alert rows and history entries a batch of verdicts makes."""

    new: list[dict[str, Any]] = field(default_factory=list)
    changed: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    raised: int = 0
    source_of_gap: dict[int, str | None] = field(default_factory=dict)  # filled when first needed


def write_verdicts(
    session: Session,
    candidates: dict[int, list[Candidate]],
    gap_ids: dict[tuple[int, int], int],
    now: datetime,
) -> int:
    """Judge each benchmark by its best candidate and store the verdict on its alert (bulk statements,
    no ORM object per benchmark); returns how many alerts were newly raised."""
    if not candidates:
        return 0
    ids = sorted(candidates)
    existing = _alerts(session, ids)
    writes = _Writes()
    for benchmark_id in ids:
        judged = candidates[benchmark_id]
        best = judged[0] if len(judged) == 1 else min(judged, key=lambda c: verdict_rank(c.source))
        verdict = judge(
            best.gap,
            best.threshold,
            best.band,
            best.diagnoses,
            best.acceptance_factor,
            best.accept_length_source,
        )
        gap_id = gap_ids.get((benchmark_id, best.prediction_id))
        reason = f"against the {_source_text(best)} prediction: {verdict.reason}"
        # the values of VERDICT_COLUMNS, in order: a plain tuple, compared as _alerts selects them
        values: tuple[Any, ...] = (gap_id, verdict.is_alert, verdict.severity, verdict.code, reason)
        old = existing.get(benchmark_id)
        if old is not None and old[_CODE_AT] == COLLAPSE_CODE:
            # a live window's acceptance collapse outranks its gap (db/acceptance_alerts.py)
            values = (gap_id, True, COLLAPSE_SEVERITY, COLLAPSE_CODE, old.reason)
        if old is None:
            writes.new.append(
                dict(
                    benchmark_id=benchmark_id,
                    **dict(zip(VERDICT_COLUMNS, values, strict=True)),
                    status=GapStatus.OPEN,
                    note=None,
                    updated_at=now,
                )
            )
            writes.raised += verdict.is_alert
        elif values != old[1 : 1 + len(VERDICT_COLUMNS)]:
            if not writes.source_of_gap:
                writes.source_of_gap.update(_sources_of_gaps(candidates, gap_ids))
            _change(session, writes, old, best, verdict, dict(zip(VERDICT_COLUMNS, values, strict=True)), now)
    insert_rows(session, Alert, writes.new)
    update_rows(session, Alert, writes.changed, key="benchmark_id")
    insert_rows(session, AlertEvent, writes.events)
    return writes.raised


def _alerts(session: Session, benchmark_ids: list[int]) -> dict[int, Row]:
    """The stored alerts of these benchmarks as plain rows (no joins: this runs over every benchmark on a
    full refresh); the source an alert was judged against comes from the gaps at hand."""
    query = select(
        Alert.benchmark_id, *(Alert.__table__.c[name] for name in VERDICT_COLUMNS), Alert.status, Alert.note
    )
    return {row.benchmark_id: row for row in select_in(session, query, Alert.benchmark_id, benchmark_ids)}


def _change(
    session: Session,
    writes: _Writes,
    old: Row,
    best: Candidate,
    verdict: Verdict,
    values: dict[str, Any],
    now: datetime,
) -> None:
    """A changed verdict on a stored alert; the investigation moves with it where the change decides it:
    an alert that no longer holds is resolved, one raised again after it was resolved opens again."""
    status, note, reason = old.status, old.note, values["reason"]
    old_source = writes.source_of_gap.get(old.gap_id)
    if old.is_alert and not verdict.is_alert and status in ACTIVE_STATUSES:
        why = (
            f"the {best.source} prediction supersedes the {old_source} one"
            if old_source and old_source != best.source
            else "its prediction changed"
        )
        status, note = GapStatus.RESOLVED, f"no longer an alert: {why}; {reason}"
    elif not old.is_alert and verdict.is_alert:
        writes.raised += 1
        bench = session.get(Benchmark, old.benchmark_id)
        if status == GapStatus.RESOLVED and bench is not None and bench.superseded_by_id is None:
            status, note = GapStatus.OPEN, f"raised again: {reason}"
    if status != old.status:
        writes.events.append(
            dict(
                benchmark_id=old.benchmark_id,
                at=now,
                who=REFRESH_WHO,
                from_status=old.status,
                to_status=status,
                note=note,
            )
        )
    writes.changed.append(
        dict(benchmark_id=old.benchmark_id, **values, status=status, note=note, updated_at=now)
    )


def _sources_of_gaps(candidates: dict[int, list[Candidate]], gap_ids: dict[tuple[int, int], int]) -> dict:
    """gap id -> the source of its prediction, for the gaps of the benchmarks judged."""
    source_of_prediction = {c.prediction_id: c.source for judged in candidates.values() for c in judged}
    return {gap_id: source_of_prediction.get(prediction_id) for (_, prediction_id), gap_id in gap_ids.items()}


def _source_text(candidate: Candidate) -> str:
    if candidate.source == PredictionSource.CALIBRATED and candidate.version is not None:
        return f"calibrated (parameter set v{candidate.version})"
    return candidate.source
