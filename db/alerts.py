"""Alerts and their investigation. An alert is one benchmark's verdict (answers/verdicts.py): its id is the
benchmark's id, its status and note are the investigation's whatever prediction judges it. Filtered pages
and groups of alerts, one alert in full with every source's gap as analysis, status changes one at a time
or by group with who/when history, muted diagnoses per deployment, and superseding reruns."""

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, bindparam, case, func, select, true
from sqlalchemy.orm import Session

from specdash.costmodel.diagnoses import ALERT_SEVERITIES, DIAGNOSIS_CODES, SEVERITY_ORDER
from specdash.costmodel.domain import ACTIVE_STATUSES, GapStatus
from specdash.db import investigation, loadmodels, parity_counts
from specdash.db.alert_rows import AlertGroup, MutedDiagnosis, RerunCandidate, SourceGap
from specdash.db.bulk import chunks
from specdash.db.gap_joins import GAP_DETAIL_COLUMNS, muted_clause, with_verdict_joins
from specdash.db.models import (
    BENCHMARK_SETTING,
    Alert,
    AlertEvent,
    AlertMute,
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    Prediction,
    Run,
    utcnow,
)
from specdash.db.rows import rows_of
from specdash.db.settings import get_gap_threshold, threshold_sql

# An alert's severity is its verdict's; "none" for an alert without one.
SEVERITIES = ALERT_SEVERITIES
__all__ = [
    "DIAGNOSIS_CODES",
    "SEVERITIES",
    "alert_choices",
]  # the filters' choices, defined by the cost model's rules
GROUPINGS = ("deployment", "run", "diagnosis")
# What an alert's detail shows of the prediction that judges it: its baseline and round-time parts.
PREDICTION_PARTS = (
    "baseline_tps",
    "baseline_estimated",
    "compute_ms",
    "comm_ms",
    "draft_ms",
    "overhead_ms",
    "accept_length_source",
    "approximation",
)


class AlertChangeError(ValueError):
    """A status change, mute or link that cannot be made; the message says why."""


@dataclass(frozen=True)
class AlertFilters:
    """Plain, hashable filters (the dashboard caches on them). Empty tuples and None mean "any"."""

    statuses: tuple[str, ...] = ACTIVE_STATUSES
    severities: tuple[str, ...] = ()
    source: str | None = None  # the prediction the verdict is against
    deployment: str | None = None
    run: str | None = None
    diagnosis: str | None = None  # a diagnosis code such as algorithm_mismatch
    raised: bool | None = True  # True: alerts only; False: benchmarks that are not alerts; None: both
    muted: bool | None = False  # False: muted alerts left out; True: only them; None: both


def alert_select(global_threshold: float):
    """Every benchmark's verdict with its run, checkpoint, deployment and the gap it is judged on."""
    return with_verdict_joins(
        select(
            Alert.benchmark_id.label("alert_id"),
            Alert.benchmark_id,
            Alert.gap_id,
            *GAP_DETAIL_COLUMNS,
            Benchmark.input_tokens,  # the context, shown where the rows differ in it
            Benchmark.output_tokens,
            Alert.severity,
            Alert.status,
            Alert.note,
            Alert.is_alert,
            Alert.code,
            Alert.reason,
            muted_clause().label("muted"),
            Gap.diagnoses,
            threshold_sql(global_threshold).label("threshold"),
        )
    )


def _filtered(session: Session, filters: AlertFilters) -> Select:
    return _filtered_select(filters, get_gap_threshold(session))


@lru_cache(maxsize=64)
def _filtered_select(filters: AlertFilters, global_threshold: float) -> Select:
    """The verdicts matching the filters, built once per filters and threshold: the Overview asks for the
    same ones on every render, and building this select (and its cache key) cost more than its SQL."""
    query = alert_select(global_threshold)
    if filters.raised is not None:
        query = query.where(Alert.is_alert.is_(filters.raised))
    if filters.muted is not None:
        query = query.where(muted_clause() if filters.muted else ~muted_clause())
    if filters.statuses:
        query = query.where(Alert.status.in_(filters.statuses))
    if filters.severities:
        named = [s for s in filters.severities if s != "none"]
        condition: ColumnElement[bool] = Alert.severity.in_(named)
        if "none" in filters.severities:
            condition = condition | Alert.severity.is_(None)
        query = query.where(condition)
    if filters.source:
        query = query.where(Prediction.source == filters.source)
    if filters.deployment:
        query = query.where(Deployment.name == filters.deployment)
    if filters.run:
        query = query.where(Run.name == filters.run)
    if filters.diagnosis:
        query = query.where(Alert.code == filters.diagnosis)
    return query


def _rows(session: Session, query, parameters: dict[str, Any] | None = None) -> list[dict]:
    rows = [dict(row) for row in session.connection().execute(query, parameters).mappings()]
    for row in rows:
        row["muted"] = bool(row["muted"])
        row["diagnoses"] = row["diagnoses"] or []  # none while the verdict's gap is gone
    return rows


SEVERITY_RANK = case(SEVERITY_ORDER, value=Alert.severity, else_=len(SEVERITY_ORDER))


def alert_page(
    session: Session, filters: AlertFilters, offset: int = 0, limit: int = 50, count: bool = True
) -> tuple[list[dict], int | None]:
    """One page of alerts matching the filters, the most severe first and within a severity the largest
    gap, and how many match in all (None with count=False: a top-N view need not count them all)."""
    statements = _page_statements(filters, get_gap_threshold(session))
    connection = session.connection()
    total = (connection.execute(statements.total).scalar() or 0) if count else None
    ids = page_ids(session, statements, offset, limit)
    rows = {row["alert_id"]: row for row in _rows(session, statements.rows, {"ids": ids})}
    return [rows[i] for i in ids], total


@dataclass(frozen=True)
class PageStatements:
    """The statements of a page of alerts matching some filters: how many match, their ids by severity
    (how many of a severity, and its ids from `offset`, at most `limit`, largest gap first) and the rows
    of the alerts bound as `ids`."""

    total: Select
    by_severity: tuple[tuple[Select, Select], ...]
    rows: Select


@lru_cache(maxsize=64)
def _page_statements(filters: AlertFilters, global_threshold: float) -> PageStatements:
    """Built once per filters and threshold: the Overview asks for the same top five on every render."""
    query = _filtered_select(filters, global_threshold)
    keys = query.with_only_columns(Alert.benchmark_id)
    unranked = Alert.severity.is_(None) | Alert.severity.not_in(list(SEVERITY_ORDER))
    by_severity = []
    for severity in [*(Alert.severity == name for name in SEVERITY_ORDER), unranked]:
        part = keys.where(severity)
        ordered = part.order_by(func.abs(func.coalesce(Gap.gap, 0)).desc(), Alert.benchmark_id)
        page = ordered.offset(bindparam("offset", type_=Integer)).limit(bindparam("limit", type_=Integer))
        by_severity.append((_count_of(part), page))
    rows = query.where(Alert.benchmark_id.in_(bindparam("ids", expanding=True)))
    return PageStatements(_count_of(keys), tuple(by_severity), rows)


def _count_of(query: Select) -> Select:
    return select(func.count()).select_from(query.subquery())


def alert_ids(session: Session, filters: AlertFilters) -> list[int]:
    """Every alert id matching the filters (what a group action changes)."""
    query = _filtered(session, filters).with_only_columns(Alert.benchmark_id).order_by(Alert.benchmark_id)
    return list(session.scalars(query))


def alert_groups(session: Session, filters: AlertFilters, by: str) -> list[AlertGroup]:
    """Alerts matching the filters counted per deployment, run or leading diagnosis, with how many of each
    severity: the triage view."""
    if by not in GROUPINGS:
        raise AlertChangeError(f"group by one of {', '.join(GROUPINGS)}, not {by!r}")
    column = {"deployment": Deployment.name, "run": Run.name, "diagnosis": Alert.code}[by]
    query = (
        _filtered(session, filters)
        .with_only_columns(
            column.label("group"),
            func.count().label("alerts"),
            *(
                func.sum(case((Alert.severity == name, 1), else_=0)).label(name)
                for name in AlertGroup._fields[2:]  # the diagnosis severities
            ),
        )
        .group_by(column)
        .order_by(func.count().desc(), column)
    )
    return [
        AlertGroup(group if group is not None else "(none)", *counts)
        for group, *counts in session.connection().execute(query)
    ]


def alert_detail(session: Session, alert_id: int) -> dict[str, Any] | None:
    """Everything the Alerts page shows about one alert: its verdict (as in alert_page), the benchmark,
    the judging prediction's round-time parts, every source's gap (analysis), what supersedes or is
    superseded by the benchmark, and the active mute that hides it, if any."""
    rows = _rows(session, alert_select(get_gap_threshold(session)).where(Alert.benchmark_id == alert_id))
    if not rows:
        return None
    detail = rows[0]
    # the verdict select above joins both: they are there
    bench = session.get_one(Benchmark, alert_id)
    alert = session.get_one(Alert, alert_id)
    pred = alert.gap.prediction if alert.gap is not None else None
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
        deployment_id=bench.deployment_id,
        **{name: getattr(pred, name) if pred else None for name in PREDICTION_PARTS},
        analysis=source_gaps(session, alert_id),
        mute=active_mute(session, bench.deployment_id, alert.code) if alert.code else None,
    )
    return detail


def source_gaps(session: Session, benchmark_id: int) -> list[SourceGap]:
    """The benchmark against every prediction source (the verdict's is marked): analysis, not alerts."""
    query = (
        select(
            Gap.id.label("gap_id"),
            Prediction.source,
            Gap.predicted_tps,
            Gap.gap,
            Prediction.accept_length.label("predicted_accept_length"),
            Gap.severity,
            Gap.diagnoses,
            (Alert.gap_id == Gap.id).label("verdict"),
        )
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .outerjoin(Alert, Alert.benchmark_id == Gap.benchmark_id)
        .where(Gap.benchmark_id == benchmark_id)
        .order_by(Prediction.source)
    )
    return [
        SourceGap._make((*row[:6], ", ".join(d["code"] for d in row[6]), bool(row[7])))
        for row in session.connection().execute(query)
    ]


def alert_history(session: Session, alert_id: int) -> list[investigation.StatusChange]:
    """Who changed the alert's status or note, and when, oldest first."""
    return investigation.history(session, AlertEvent, AlertEvent.benchmark_id, alert_id)


def change_status(
    session: Session, alert_id: int, status: str, who: str, note: str | None = None
) -> AlertEvent:
    """Set an alert's status (and note) and record the change; the same status with a new note records the
    note. Writes in the caller's transaction."""
    return investigation.change_status(
        session,
        session.get(Alert, alert_id),
        AlertEvent,
        {"benchmark_id": alert_id},
        status,
        who,
        note,
        AlertChangeError,
        "alert",
        missing=f"no alert with id {alert_id}",
        already=f"alert #{alert_id}",
    )


def _record(session: Session, alert: Alert, status: str, who: str, note: str | None) -> AlertEvent:
    owner = {"benchmark_id": alert.benchmark_id}
    return investigation.record_change(session, alert, AlertEvent, owner, status, who, note)


def change_status_many(
    session: Session, alert_ids: list[int], status: str, who: str, note: str | None = None
) -> list[AlertEvent]:
    """The same status change for a group of alerts (each gets its own history entry); alerts already in
    that status are left alone unless a note is given."""
    investigation.checked_status(status, AlertChangeError)
    who = investigation.checked_who(who, AlertChangeError, "alert")
    note = investigation.checked_note(note)
    if not alert_ids:
        raise AlertChangeError("no alert in this group")
    events = []
    for chunk in chunks(alert_ids):
        for alert in session.scalars(select(Alert).where(Alert.benchmark_id.in_(chunk))):
            if alert.status != status or note is not None:
                events.append(_record(session, alert, status, who, note))
    session.flush()
    return events


def change_group(
    session: Session, filters: AlertFilters, status: str, who: str, note: str | None = None
) -> list[AlertEvent]:
    """Every alert the filters select (a triage group) moves to `status`."""
    return change_status_many(session, alert_ids(session, filters), status, who, note)


def active_mute(session: Session, deployment_id: int, diagnosis: str) -> dict | None:
    mute = session.scalars(
        select(AlertMute)
        .where(
            AlertMute.deployment_id == deployment_id,
            AlertMute.diagnosis == diagnosis,
            AlertMute.lifted_at.is_(None),
        )
        .order_by(AlertMute.id)
    ).first()
    if mute is None:
        return None
    return {
        "id": mute.id,
        "diagnosis": mute.diagnosis,
        "reason": mute.reason,
        "who": mute.who,
        "created_at": mute.created_at,
    }


def mute_diagnosis(session: Session, deployment: str, diagnosis: str, reason: str, who: str) -> AlertMute:
    """Hide alerts led by `diagnosis` on a deployment (a known, accepted cause), saying why; reversible with
    lift_mute. The alerts keep their verdicts and reappear when the mute is lifted."""
    who = investigation.checked_who(who, AlertChangeError, "alert")
    reason = (reason or "").strip()
    if not reason:
        raise AlertChangeError("say why: a mute is shown with its reason")
    if diagnosis not in DIAGNOSIS_CODES:
        raise AlertChangeError(f"diagnosis must be one of {', '.join(DIAGNOSIS_CODES)}, not {diagnosis!r}")
    deployment_id = session.scalar(select(Deployment.id).where(Deployment.name == deployment))
    if deployment_id is None:
        raise AlertChangeError(f"no deployment named {deployment!r}")
    if active_mute(session, deployment_id, diagnosis) is not None:
        raise AlertChangeError(f"{diagnosis} is already muted on {deployment}")
    mute = AlertMute(
        deployment_id=deployment_id, diagnosis=diagnosis, reason=reason, who=who, created_at=utcnow()
    )
    session.add(mute)
    session.flush()
    return mute


def lift_mute(session: Session, mute_id: int, who: str) -> AlertMute:
    who = investigation.checked_who(who, AlertChangeError, "alert")
    mute = session.get(AlertMute, mute_id)
    if mute is None or mute.lifted_at is not None:
        raise AlertChangeError(f"no active mute with id {mute_id}")
    mute.lifted_at, mute.lifted_by = utcnow(), who
    session.flush()
    return mute


def mutes(session: Session, active_only: bool = True) -> list[MutedDiagnosis]:
    """Muted diagnoses per deployment, with who, why, when, and how many alerts each hides now."""
    hidden = (
        select(func.count())
        .select_from(Alert)
        .join(Benchmark, Alert.benchmark_id == Benchmark.id)
        .where(
            Benchmark.deployment_id == AlertMute.deployment_id,
            Alert.code == AlertMute.diagnosis,
            Alert.is_alert.is_(True),
        )
        .scalar_subquery()
    )
    query = (
        select(
            AlertMute.id,
            Deployment.name.label("deployment"),
            AlertMute.diagnosis,
            AlertMute.reason,
            AlertMute.who,
            AlertMute.created_at,
            AlertMute.lifted_at,
            AlertMute.lifted_by,
            hidden.label("alerts"),
        )
        .join(Deployment, AlertMute.deployment_id == Deployment.id)
        .where(AlertMute.lifted_at.is_(None) if active_only else true())
        .order_by(AlertMute.id)
    )
    return rows_of(session, query, MutedDiagnosis)


def supersede_candidates(session: Session, benchmark_id: int) -> list[RerunCandidate]:
    """Other benchmarks of the same checkpoint that could replace this one (e.g. its rerun with the right
    flags), newest first."""
    columns = (
        Benchmark.id.label("benchmark_id"),
        Deployment.name.label("deployment"),
        *BENCHMARK_SETTING,
        Benchmark.decode_tps,
        Benchmark.accept_length,
        Benchmark.label,
    )
    bench = session.get(Benchmark, benchmark_id)
    if bench is None or bench.checkpoint_id is None:
        return []
    query = (
        select(*columns)
        .join(Deployment, Benchmark.deployment_id == Deployment.id)
        .where(
            Benchmark.checkpoint_id == bench.checkpoint_id,
            Benchmark.id != bench.id,
            Benchmark.superseded_by_id.is_(None),
        )
        .order_by(Benchmark.id.desc())
    )
    return rows_of(session, query, RerunCandidate)


def link_superseding(
    session: Session,
    benchmark_id: int,
    superseding_id: int,
    who: str,
    note: str | None = None,
    status: str = GapStatus.RESOLVED,
) -> list[AlertEvent]:
    """Mark `benchmark_id` as superseded by `superseding_id` (a valid rerun of an invalid benchmark); its
    alert moves to `status` with a history entry naming the rerun."""
    who = investigation.checked_who(who, AlertChangeError, "alert")
    investigation.checked_status(status, AlertChangeError)
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
    parity_counts.superseding(session, old.id)  # the earlier ones below were superseded already
    loadmodels.recheck_fits(session)  # a superseded benchmark leaves its deployment's load observations
    old.superseded_by_id = new.id
    # Benchmarks the old one superseded now point at the newest run, so chains stay one link long.
    for earlier in session.scalars(select(Benchmark).where(Benchmark.superseded_by_id == old.id)):
        earlier.superseded_by_id = new.id
    reason = f"superseded by benchmark {new.id}" + (f" ({new.label})" if new.label else "")
    text = f"{reason}: {note.strip()}" if note and note.strip() else reason
    alert = session.get(Alert, old.id)
    events = [_record(session, alert, status, who, text)] if alert is not None else []
    session.flush()
    return events


# --- paging and filter choices: one page found without sorting every alert that matches -------------
def page_ids(session: Session, statements: PageStatements, offset: int, limit: int) -> list[int]:
    """The page's alert ids, the most severe first: one severity at a time, each sorted by its largest gaps
    alone and only until the page is full (sorting all 120,000 open alerts of a 400,000-benchmark store for
    the Overview's top five cost a second). A severity the offset skips whole is only counted."""
    ids: list[int] = []
    connection = session.connection()
    for counted, ordered in statements.by_severity:
        if len(ids) >= limit:
            break
        if offset:
            n = connection.execute(counted).scalar() or 0
            if n <= offset:
                offset -= n
                continue
        ids += connection.execute(ordered, {"offset": offset, "limit": limit - len(ids)}).scalars()
        offset = 0
    return ids


def alert_choices(session: Session) -> dict[str, list[str]]:
    """Values the alert filters can take: prediction sources, deployments and runs that have verdicts.
    Each found from its own side (a run or deployment with one verdict of a checkpoint's benchmark, a
    source whose prediction judges one) instead of listing every verdict with its joins."""
    verdicts = (
        select(Alert.benchmark_id)
        .join(Benchmark, Alert.benchmark_id == Benchmark.id)
        .join(Checkpoint, Benchmark.checkpoint_id == Checkpoint.id)
    )
    runs = select(Run.name).where(verdicts.where(Checkpoint.run_id == Run.id).exists())
    deployments = select(Deployment.name).where(
        verdicts.where(Benchmark.deployment_id == Deployment.id).exists()
    )
    # a verdict's gap is always of a checkpoint's benchmark (the refresh judges no other), so the sources
    # need not look the benchmarks up
    sources = (
        select(Prediction.source)
        .select_from(Alert)
        .join(Gap, Alert.gap_id == Gap.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .distinct()
    )
    return {
        name: sorted(v for v in session.scalars(query) if v is not None)
        for name, query in (("source", sources), ("deployment", deployments), ("run", runs))
    }
