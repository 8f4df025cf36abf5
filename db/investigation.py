"""The investigation workflow alerts and depth advisories share: a status (open, investigating, explained,
resolved, dismissed), a note, and a history entry for every change saying who made it, when and why."""

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import NamedTuple, Protocol, TypeVar

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.bulk import Column
from specdash.db.models import GAP_STATUSES, utcnow
from specdash.db.rows import rows_of


class StatusChange(NamedTuple):
    """One entry of an alert's or advisory's history: who moved it from one status to another, and why."""

    at: datetime
    who: str | None
    from_status: str | None
    to_status: str
    note: str | None


class Investigated(Protocol):
    """A row under investigation (an alert, an advisory)."""

    status: str
    note: str | None
    updated_at: datetime


Event = TypeVar("Event")


def checked_status(status: str, error: type[Exception]) -> str:
    if status not in GAP_STATUSES:
        raise error(f"status must be one of {', '.join(GAP_STATUSES)}, not {status!r}")
    return status


def checked_who(who: str | None, error: type[Exception], what: str) -> str:
    """Who makes a change (required: the history records it); `what` names the row in the message."""
    who = (who or "").strip()
    if not who:
        raise error(f"say who you are: the {what}'s history records who changed it")
    return who


def checked_note(note: str | None) -> str | None:
    return (note or "").strip() or None


def record_change(
    session: Session,
    row: Investigated,
    event_model: Callable[..., Event],
    owner: Mapping[str, int],
    status: str,
    who: str,
    note: str | None,
    keep_note: bool = False,
) -> Event:
    """Move `row` to `status` with a history entry (an `event_model` row naming its `owner`) saying who
    and why; the note becomes the row's note unless `keep_note` (specdash's own entries on an advisory
    leave a person's note in place)."""
    now = utcnow()
    event = event_model(**owner, who=who, from_status=row.status, to_status=status, note=note, at=now)
    row.status, row.updated_at = status, now
    if note is not None and not keep_note:
        row.note = note
    session.add(event)
    return event


def change_status(
    session: Session,
    row: Investigated | None,
    event_model: Callable[..., Event],
    owner: Mapping[str, int],
    status: str,
    who: str,
    note: str | None,
    error: type[Exception],
    what: str,
    missing: str,
    already: str,
) -> Event:
    """A person's status change (and note) of one row, validated in the workflow's order: the status,
    who, the row (`missing` when there is none), and a note when the status stays (`already` names the
    row: "alert #3", "the advisory"). Writes in the caller's transaction."""
    checked_status(status, error)
    who = checked_who(who, error, what)
    note = checked_note(note)
    if row is None:
        raise error(missing)
    if status == row.status and note is None:
        raise error(f"{already} is already {status}; add a note to record something")
    event = record_change(session, row, event_model, owner, status, who, note)
    session.flush()
    return event


def history(session: Session, event_model: type, owner: Column, owner_id: int) -> list[StatusChange]:
    """Who changed a row's status or note, and when, oldest first (`owner`: the events' column naming it)."""
    columns = [getattr(event_model, name) for name in StatusChange._fields]
    query = select(*columns).where(owner == owner_id).order_by(event_model.id)  # type: ignore[attr-defined]
    return rows_of(session, query, StatusChange)
