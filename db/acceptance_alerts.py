"""Acceptance collapse on a live deployment, judged window by window in the transaction that stores each
window: the first collapsed window's alert is made critical (whatever its ordinary verdict), the windows
that follow belong to it, and the first window back above the line writes the recovery into its history.

The state a window leaves is kept in its benchmark's raw record (`raw["acceptance"]`), so a scraper that
restarts carries on from what the store says."""

import statistics
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.costmodel.collapse import (
    COLLAPSE_CODE,
    COLLAPSE_SEVERITY,
    AcceptanceCheck,
    ReferenceSource,
    check_acceptance,
)
from specdash.db.history import HISTORY_WINDOW
from specdash.db.investigation import record_change
from specdash.db.models import Alert, AlertEvent, Benchmark, Gap, Prediction, utcnow

SCRAPE_WHO = "specdash scrape"
LIVE_FORMAT = "live"  # the source format of a live window's benchmark
# How many earlier windows are looked through for the last state and the history reference.
LOOKBACK = 50


@dataclass(frozen=True)
class WindowAcceptance:
    """What one window's accept length meant: the check, and the collapse alert it raised or belongs to
    (None for a window of an unnamed drafter, which cannot be an alert)."""

    check: AcceptanceCheck
    alert_id: int | None
    reference: float | None
    reference_source: ReferenceSource | None


def _earlier_windows(session: Session, bench: Benchmark) -> list[Benchmark]:
    """This drafter's earlier live windows on this deployment, latest first."""
    query = (
        select(Benchmark)
        .where(
            Benchmark.deployment_id == bench.deployment_id,
            Benchmark.source_format == LIVE_FORMAT,
            Benchmark.id < bench.id,  # stored before it: windows are stored in the order they are scraped
            Benchmark.accept_length.is_not(None),
            (
                Benchmark.checkpoint_id.is_(None)
                if bench.checkpoint_id is None
                else Benchmark.checkpoint_id == bench.checkpoint_id
            ),
        )
        # by storage order, not measured_at: saved scrapes (--once) are timed by their files' modification
        # times, which a fresh checkout sets all alike and in its own order
        .order_by(Benchmark.id.desc())
        .limit(LOOKBACK)
    )
    return list(session.scalars(query))


def _state(bench: Benchmark) -> dict[str, Any]:
    return dict((bench.raw or {}).get("acceptance") or {})


def reference_of(
    session: Session, bench: Benchmark, earlier: list[Benchmark]
) -> tuple[float | None, ReferenceSource | None]:
    """The accept length the drafter should reach here: its judging prediction's when that comes from
    the checkpoint's training accuracies, else the median of its latest windows that had not collapsed."""
    predicted = session.execute(
        select(Prediction.accept_length, Prediction.accept_length_source)
        .join(Gap, Gap.prediction_id == Prediction.id)
        .join(Alert, Alert.gap_id == Gap.id)
        .where(Alert.benchmark_id == bench.id)
    ).first()
    if predicted is not None and predicted[0] is not None and predicted[1] == "training":
        return float(predicted[0]), "training"
    healthy = [b.accept_length for b in earlier if not _state(b).get("collapsed")][:HISTORY_WINDOW]
    values = [float(a) for a in healthy if a is not None]
    return (statistics.median(values), "history") if values else (None, None)


def judge_window(session: Session, benchmark_id: int) -> WindowAcceptance | None:
    """Judge a stored window's accept length against the collapse lines (None when it has none) and
    write what follows: the raised alert, or the recovery in the collapse alert's history."""
    bench = session.get(Benchmark, benchmark_id)
    if bench is None or bench.accept_length is None:
        return None
    if _state(bench):  # judged already (the same window stored again)
        state = _state(bench)
        return None if "change" not in state else _replayed(bench, state)
    earlier = _earlier_windows(session, bench)
    last = _state(earlier[0]) if earlier else {}
    reference, source = reference_of(session, bench, earlier)
    check = check_acceptance(
        bench.accept_length, reference, source, was_collapsed=bool(last.get("collapsed"))
    )
    alert_id: int | None = last.get("alert_id") if check.collapsed or check.change == "recovered" else None
    if check.is_alert:
        alert_id = raise_collapse(session, bench, check) if bench.checkpoint_id is not None else None
    elif check.change == "recovered" and alert_id is not None:
        record_recovery(session, alert_id, check)
    bench.raw = {
        **(bench.raw or {}),
        "acceptance": dict(
            change=check.change,
            collapsed=check.collapsed,
            line=round(check.line, 6),
            reference=reference,
            reference_source=source,
            alert_id=alert_id,
            text=check.text,
        ),
    }
    return WindowAcceptance(check, alert_id, reference, source)


def _replayed(bench: Benchmark, state: dict[str, Any]) -> WindowAcceptance:
    assert bench.accept_length is not None  # judged windows have one
    check = check_acceptance(
        bench.accept_length,
        state.get("reference"),
        state.get("reference_source"),
        was_collapsed=state["change"] in ("still collapsed", "recovered"),
    )
    return WindowAcceptance(
        check, state.get("alert_id"), state.get("reference"), state.get("reference_source")
    )


def raise_collapse(session: Session, bench: Benchmark, check: AcceptanceCheck) -> int:
    """The window's alert becomes the collapse's: critical, open, its reason the check's verdict."""
    alert = session.get(Alert, bench.id)
    values = dict(is_alert=True, severity=COLLAPSE_SEVERITY, code=COLLAPSE_CODE, reason=check.text)
    if alert is None:
        alert = Alert(benchmark_id=bench.id, gap_id=None, status="open", updated_at=utcnow(), **values)
        session.add(alert)
    else:
        for key, value in values.items():
            setattr(alert, key, value)
        if alert.status != "open":
            record_change(
                session, alert, AlertEvent, {"benchmark_id": bench.id}, "open", SCRAPE_WHO, check.text
            )
    session.flush()
    return bench.id


def record_recovery(session: Session, alert_id: int, check: AcceptanceCheck) -> None:
    """Acceptance is back: the collapse alert says so in its history (and is resolved while still active)."""
    alert = session.get(Alert, alert_id)
    if alert is None:
        return
    status = "resolved" if alert.status in ("open", "investigating") else alert.status
    record_change(
        session, alert, AlertEvent, {"benchmark_id": alert_id}, status, SCRAPE_WHO, check.text, keep_note=True
    )
    session.flush()


def window_verdict(session: Session, benchmark_id: int) -> tuple[bool, str | None, str | None]:
    """(is an alert, severity, reason) of a stored window's verdict; (False, None, None) without one."""
    row = session.execute(
        select(Alert.is_alert, Alert.severity, Alert.reason).where(Alert.benchmark_id == benchmark_id)
    ).first()
    return (bool(row[0]), row[1], row[2]) if row is not None else (False, None, None)
