"""The change history: who changed which stored value, when, from what to what (db.models.Change).

Writers do not pass a name around: the command line records the login name, and the dashboard runs each
write inside `acting_as(user)` (the signed-in user in team mode, else "dashboard"). Values are stored as
JSON; anything JSON cannot hold is stored as its text."""

import getpass
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime
from typing import NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from specdash.db.models import Change, utcnow

_WHO: ContextVar[str | None] = ContextVar("specdash_who", default=None)
WHO_LENGTH = 200


def login_name() -> str:
    """The operating system's name for who runs this process (no passwd entry in some containers)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def current_who() -> str:
    return (_WHO.get() or login_name())[:WHO_LENGTH]


@contextmanager
def acting_as(who: str) -> Iterator[None]:
    """Record `who` for every change written inside the block (this thread or task only)."""
    token = _WHO.set(who)
    try:
        yield
    finally:
        _WHO.reset(token)


def _storable(value):
    """A value as JSON holds it: numbers (finite), text, booleans, None, lists and dicts of them."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_storable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _storable(v) for k, v in value.items()}
    return str(value)


def record_change(
    session: Session,
    action: str,
    kind: str,
    subject: str,
    field: str | None = None,
    old=None,
    new=None,
    note: str | None = None,
) -> Change:
    change = Change(
        at=utcnow(),
        who=current_who(),
        action=action,
        kind=kind,
        subject=str(subject)[:300],
        field=field,
        old_value=_storable(old),
        new_value=_storable(new),
        note=note,
    )
    session.add(change)
    return change


class ChangeEntry(NamedTuple):
    """One change as the history shows it: values as text ("" for none), who made it and when."""

    at: datetime
    who: str
    action: str
    kind: str
    subject: str
    field: str
    from_value: str
    to_value: str
    note: str


def recent_changes(session: Session, limit: int = 200, kind: str | None = None) -> list[ChangeEntry]:
    """The latest changes, newest first, as the Settings page and `specdash changes` show them."""
    query = select(Change).order_by(Change.at.desc(), Change.id.desc()).limit(limit)
    if kind:
        query = query.where(Change.kind == kind)
    return [
        ChangeEntry(
            at=c.at,
            who=c.who or "",
            action=c.action,
            kind=c.kind,
            subject=c.subject,
            field=c.field or "",
            from_value=_shown(c.old_value),
            to_value=_shown(c.new_value),
            note=c.note or "",
        )
        for c in session.scalars(query)
    ]


def _shown(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
