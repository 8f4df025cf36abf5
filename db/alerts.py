"""Alerts (gaps at or above their threshold) and their investigation: filtered pages of alerts, one alert in
full, status changes with a note and who/when history, and linking a benchmark that supersedes an invalid
one."""

from dataclasses import dataclass
from typing import Any

import pandas as pd
from sqlalchemy import Text, case, cast, func, select
from sqlalchemy.orm import Session

from specdash.costmodel.diagnoses import DIAGNOSIS_CODES, SEVERITY_ORDER
from specdash.costmodel.diagnoses import SEVERITIES as DIAGNOSIS_SEVERITIES
from specdash.db.models import (
    ACTIVE_STATUSES,
    GAP_STATUSES,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    GapEvent,
    Prediction,
    Run,
    utcnow,
)
from specdash.db.queries import gap_select
from specdash.db.settings import get_gap_threshold, is_alert, is_alert_sql, threshold_sql

# An alert's severity is its worst diagnosis; "none" for an alert no rule explains.
SEVERITIES = (*DIAGNOSIS_SEVERITIES, "none")
__all__ = ["DIAGNOSIS_CODES", "SEVERITIES"]  # the filters' choices, defined by the cost model's rules


class AlertChangeError(ValueError):
    """A status change or link that cannot be made; the message says why."""


@dataclass(frozen=True)
class AlertFilters:
    """Plain, hashable filters (the dashboard caches on them). Empty tuples and None mean "any"."""

    statuses: tuple[str, ...] = ACTIVE_STATUSES
    severities: tuple[str, ...] = ()
    source: str | None = None
    deployment: str | None = None
    run: str | None = None
    diagnosis: str | None = None  # a diagnosis code such as algorithm_mismatch
    threshold: float | None = None  # None: each deployment's own, else the global one


def _filtered(session: Session, filters: AlertFilters):
    query = gap_select(filters.threshold, get_gap_threshold(session))
    if filters.statuses:
        query = query.where(Gap.status.in_(filters.statuses))
    if filters.severities:
        named = [s for s in filters.severities if s != "none"]
        condition = Gap.severity.in_(named)
        if "none" in filters.severities:
            condition = condition | Gap.severity.is_(None)
        query = query.where(condition)
    if filters.source:
        query = query.where(Prediction.source == filters.source)
    if filters.deployment:
        query = query.where(Deployment.name == filters.deployment)
    if filters.run:
        query = query.where(Run.name == filters.run)
    if filters.diagnosis:
        # Codes are plain identifiers stored quoted in the JSON list; a text match works on every backend.
        query = query.where(cast(Gap.diagnoses, Text).like(f'%"{filters.diagnosis}"%'))
    return query


def alert_page(
    session: Session, filters: AlertFilters, offset: int = 0, limit: int = 50, count: bool = True
) -> tuple[list[dict], int | None]:
    """One page of alerts matching the filters, the most severe first and within a severity the largest
    gap, and how many match in all (None with count=False: a top-N view need not count them all)."""
    query = _filtered(session, filters)
    total = (session.scalar(select(func.count()).select_from(query.subquery())) or 0) if count else None
    severity_rank = case(SEVERITY_ORDER, value=Gap.severity, else_=len(SEVERITY_ORDER))
    rows = session.execute(
        query.order_by(severity_rank, func.abs(Gap.gap).desc(), Gap.id).offset(offset).limit(limit)
    )
    return [dict(row) for row in rows.mappings()], total


def alert_choices(session: Session) -> dict[str, list[str]]:
    """Values the alert filters can take: prediction sources, deployments and runs that have gaps."""
    base = (
        select(Prediction.source, Deployment.name.label("deployment"), Run.name.label("run"))
        .select_from(Gap)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .join(Run, Checkpoint.run_id == Run.id)
        .distinct()
        .subquery()
    )
    return {
        name: sorted(session.scalars(select(base.c[name]).distinct()))
        for name in ("source", "deployment", "run")
    }


def alert_detail(session: Session, gap_id: int) -> dict[str, Any] | None:
    """Everything the Alerts page shows about one gap: the gap row (as in gap_rows), the benchmark, the
    prediction's round-time parts, what supersedes or is superseded by the benchmark, and the history."""
    query = gap_select(0.0, get_gap_threshold(session)).where(Gap.id == gap_id)
    row = session.execute(query).mappings().first()
    if row is None:
        return None
    detail = dict(row)
    gap = session.get(Gap, gap_id)
    bench, pred = gap.benchmark, gap.prediction
    detail.update(
        drafter_path=bench.drafter_path,
        draft_hidden_size=bench.draft_hidden_size,
        engine=bench.engine,
        source_format=bench.source_format,
        measured_at=bench.measured_at,
        superseded_by_id=bench.superseded_by_id,
        supersedes=list(
            session.scalars(
                select(Benchmark.id).where(Benchmark.superseded_by_id == bench.id).order_by(Benchmark.id)
            )
        ),
        baseline_tps=pred.baseline_tps,
        compute_ms=pred.compute_ms,
        comm_ms=pred.comm_ms,
        draft_ms=pred.draft_ms,
        overhead_ms=pred.overhead_ms,
        accept_length_source=pred.accept_length_source,
        approximation=pred.approximation,
        is_alert=is_alert(gap.gap, row["threshold"]),
    )
    return detail


def alert_history(session: Session, gap_id: int) -> pd.DataFrame:
    """Who changed the alert's status or note, and when, oldest first."""
    query = (
        select(GapEvent.at, GapEvent.who, GapEvent.from_status, GapEvent.to_status, GapEvent.note)
        .where(GapEvent.gap_id == gap_id)
        .order_by(GapEvent.id)
    )
    return pd.DataFrame(
        session.execute(query).mappings().all(), columns=["at", "who", "from_status", "to_status", "note"]
    )


def _check_who(who: str | None) -> str:
    who = (who or "").strip()
    if not who:
        raise AlertChangeError("say who you are: the alert's history records who changed it")
    return who


def change_status(session: Session, gap_id: int, status: str, who: str, note: str | None = None) -> GapEvent:
    """Set an alert's status (and note) and record the change; the same status with a new note records the
    note. Writes in the caller's transaction."""
    if status not in GAP_STATUSES:
        raise AlertChangeError(f"status must be one of {', '.join(GAP_STATUSES)}, not {status!r}")
    who = _check_who(who)
    note = (note or "").strip() or None
    gap = session.get(Gap, gap_id)
    if gap is None:
        raise AlertChangeError(f"no alert with id {gap_id}")
    if status == gap.status and note is None:
        raise AlertChangeError(f"the alert is already {status}; add a note to record something")
    event = GapEvent(gap_id=gap.id, who=who, from_status=gap.status, to_status=status, note=note, at=utcnow())
    gap.status = status
    if note is not None:
        gap.note = note
    gap.updated_at = event.at
    session.add(event)
    session.flush()
    return event


def supersede_candidates(session: Session, benchmark_id: int) -> pd.DataFrame:
    """Other benchmarks of the same checkpoint that could replace this one (e.g. its rerun with the right
    flags), newest first."""
    bench = session.get(Benchmark, benchmark_id)
    if bench is None or bench.checkpoint_id is None:
        return pd.DataFrame(
            columns=[
                "benchmark_id",
                "deployment",
                "speculative_algorithm",
                "num_steps",
                "topk",
                "num_draft_tokens",
                "concurrency",
                "dataset",
                "decode_tps",
                "accept_length",
                "label",
            ]
        )
    query = (
        select(
            Benchmark.id.label("benchmark_id"),
            Deployment.name.label("deployment"),
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.dataset,
            Benchmark.decode_tps,
            Benchmark.accept_length,
            Benchmark.label,
        )
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(
            Benchmark.checkpoint_id == bench.checkpoint_id,
            Benchmark.id != bench.id,
            Benchmark.superseded_by_id.is_(None),
        )
        .order_by(Benchmark.id.desc())
    )
    return pd.DataFrame(session.execute(query).mappings().all())


def link_superseding(
    session: Session,
    benchmark_id: int,
    superseding_id: int,
    who: str,
    note: str | None = None,
    status: str = "resolved",
) -> list[GapEvent]:
    """Mark `benchmark_id` as superseded by `superseding_id` (a valid rerun of an invalid benchmark); every
    gap of the superseded benchmark moves to `status` with a history entry naming the rerun."""
    who = _check_who(who)
    if status not in GAP_STATUSES:
        raise AlertChangeError(f"status must be one of {', '.join(GAP_STATUSES)}, not {status!r}")
    old, new = session.get(Benchmark, benchmark_id), session.get(Benchmark, superseding_id)
    if old is None or new is None:
        raise AlertChangeError(f"no benchmark with id {superseding_id if old else benchmark_id}")
    if old.id == new.id:
        raise AlertChangeError("a benchmark cannot supersede itself")
    if old.checkpoint_id != new.checkpoint_id:
        raise AlertChangeError(
            f"benchmark {new.id} measured another checkpoint; only a rerun of the same checkpoint supersedes"
        )
    if new.superseded_by_id is not None:
        raise AlertChangeError(f"benchmark {new.id} is itself superseded by benchmark {new.superseded_by_id}")
    if old.superseded_by_id is not None:
        raise AlertChangeError(
            f"benchmark {old.id} is already superseded by benchmark {old.superseded_by_id}"
        )
    old.superseded_by_id = new.id
    # Benchmarks the old one superseded now point at the newest run, so chains stay one link long.
    for earlier in session.scalars(select(Benchmark).where(Benchmark.superseded_by_id == old.id)):
        earlier.superseded_by_id = new.id
    reason = f"superseded by benchmark {new.id}" + (f" ({new.label})" if new.label else "")
    text = f"{reason}: {note.strip()}" if note and note.strip() else reason
    events = []
    for gap in session.scalars(select(Gap).where(Gap.benchmark_id == old.id).order_by(Gap.id)):
        event = GapEvent(
            gap_id=gap.id, who=who, from_status=gap.status, to_status=status, note=text, at=utcnow()
        )
        gap.status, gap.note, gap.updated_at = status, text, event.at
        session.add(event)
        events.append(event)
    session.flush()
    return events


def benchmark_outcomes(session: Session, benchmark_ids: list[int]) -> pd.DataFrame:
    """What became of some benchmarks (e.g. those an upload created): each with its prediction from every
    source, the gap, and whether that gap is an alert."""
    if not benchmark_ids:
        return pd.DataFrame()
    limit = threshold_sql(get_gap_threshold(session))
    query = (
        select(
            Benchmark.id.label("benchmark_id"),
            Run.name.label("run"),
            Checkpoint.name.label("checkpoint"),
            Deployment.name.label("deployment"),
            Benchmark.speculative_algorithm,
            Benchmark.num_steps,
            Benchmark.topk,
            Benchmark.num_draft_tokens,
            Benchmark.concurrency,
            Benchmark.dataset,
            Benchmark.decode_tps.label("measured_tps"),
            Benchmark.accept_length.label("measured_accept_length"),
            Prediction.source,
            Prediction.predicted_tps,
            Prediction.accept_length.label("predicted_accept_length"),
            Gap.id.label("gap_id"),
            Gap.gap,
            is_alert_sql(limit).label("is_alert"),
            Gap.severity,
            Gap.diagnoses,
        )
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .outerjoin(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
        .outerjoin(Run, Checkpoint.run_id == Run.id)
        .outerjoin(Gap, Gap.benchmark_id == Benchmark.id)
        .outerjoin(Prediction, Gap.prediction_id == Prediction.id)
        .where(Benchmark.id.in_(benchmark_ids))
        .order_by(Benchmark.id, Prediction.source)
    )
    frame = pd.DataFrame(session.execute(query).mappings().all())
    frame["is_alert"] = frame["is_alert"].fillna(False).astype(bool)
    return frame
