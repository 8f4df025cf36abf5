"""Global settings kept in the database (the gap threshold, ...)."""

from sqlalchemy import bindparam, func, select
from sqlalchemy.orm import Session

from specdash.db.models import Deployment, Gap, Setting

DEFAULT_GAP_THRESHOLD = 0.10
GAP_THRESHOLD = "gap_threshold"


# built once: every page reads the gap threshold, some more than once
_SETTING = select(Setting.value).where(Setting.key == bindparam("key"))


def get_setting(session: Session, key: str) -> str | None:
    return session.scalar(_SETTING, {"key": key})


def set_setting(session: Session, key: str, value: str) -> None:
    row = session.get(Setting, key)
    if row is None:
        session.add(Setting(key=key, value=value))
    else:
        row.value = value


def get_gap_threshold(session: Session) -> float:
    value = get_setting(session, GAP_THRESHOLD)
    return float(value) if value is not None else DEFAULT_GAP_THRESHOLD


def threshold_sql(global_threshold: float):
    """answers/gaps.applicable_threshold() as an SQL expression over Deployment.gap_threshold."""
    return func.coalesce(Deployment.gap_threshold, global_threshold)


def is_alert_sql(threshold):
    """SQL: a gap's size reaches the threshold (a number or threshold_sql()), either way. This lists gaps
    for analysis; whether a benchmark is an alert is its verdict (costmodel.diagnoses.judge, stored on
    Alert.is_alert), which also weighs the prediction's error band and the configuration."""
    return func.abs(Gap.gap) >= threshold


def set_gap_threshold(session: Session, threshold: float) -> None:
    if not 0 < threshold <= 1:
        raise ValueError("gap threshold must be in (0, 1]")
    set_setting(session, GAP_THRESHOLD, repr(float(threshold)))
