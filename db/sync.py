"""The one way a refresh writes derived rows (predictions, gaps, alerts): given the rows wanted and those
stored, by key, insert the new, rewrite only those whose values changed, and say each key's id."""

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from sqlalchemy.orm import Session

from specdash.db.bulk import JsonText, insert_keyed, insert_rows, update_rows
from specdash.db.models import Base


class Synced(NamedTuple):
    """What a sync did: each key's id (stored and new), and the keys of the rows it inserted and of those it
    rewrote (what depends on them, the Leaderboard's entries, is written again for those only)."""

    ids: dict[tuple[Any, ...], int]
    inserted: list[tuple[Any, ...]]
    rewritten: list[tuple[Any, ...]]


class Stored(NamedTuple):
    """A row already in the store: its id and its values, as a plain tuple in the order compared."""

    id: int
    values: tuple[Any, ...]


def sync_rows(
    session: Session,
    model: type[Base],
    key_columns: Sequence[str],
    value_columns: Sequence[str],
    wanted: Mapping[tuple[Any, ...], tuple[Any, ...]],
    stored: Mapping[tuple[Any, ...], Stored],
    stamp: Mapping[str, Any] | None = None,
    encoded: Sequence[str] = (),
) -> Synced:
    """Write `wanted` (key -> values, in the order of `key_columns` and `value_columns`) over `stored`:
    new keys inserted, stored ones rewritten where their values differ (compared as plain tuples), the
    others left as they are; `stamp` columns (a timestamp) go with every row written, and the JSON columns
    `encoded` are compared as their stored text (inserted as it is, decoded for an update). Returns key -> id for the stored and
    the new rows (a model keyed by its primary key, an alert by its benchmark, has the key as its id) and
    the keys inserted and rewritten."""
    stamp = dict(stamp or {})
    names = (*key_columns, *value_columns)
    new_rows: list[dict[str, Any]] = []
    changed_rows: list[dict[str, Any]] = []
    inserted, rewritten = [], []
    table = model.__table__
    primary = next(iter(table.primary_key)).key
    keyed_by_primary = tuple(key_columns) == (primary,)
    for key, values in wanted.items():
        row = stored.get(key)
        if row is None:
            new = dict(zip(names, key + values, strict=True))
            new.update(stamp)
            new_rows.append(new)
            inserted.append(key)
        elif values != row.values:
            changed = dict(zip(value_columns, values, strict=True))
            changed[primary] = row.id
            changed.update(stamp)
            changed_rows.append(changed)
            rewritten.append(key)
    for name in encoded:
        for written in new_rows:
            if written[name] is not None:
                written[name] = JsonText(written[name])
        for written in changed_rows:
            if written[name] is not None:
                written[name] = json.loads(written[name])
    ids = {key: row.id for key, row in stored.items()}
    if keyed_by_primary:
        insert_rows(session, model, new_rows)
        ids.update((key, key[0]) for key in wanted if key not in ids)
    else:
        ids.update(insert_keyed(session, model, new_rows, key_columns))
    update_rows(session, model, changed_rows, key=primary)
    return Synced(ids, inserted, rewritten)
