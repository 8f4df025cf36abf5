"""The Leaderboard's stored entries (db/board_models.py): rewritten by every refresh for the checkpoints it
touched, for every prediction source with gaps (a source without stored entries yet gets all of them), and
deleted with their checkpoints. The ranking itself is db/leaderboard_sql.py's, so a stored view holds what
the ranking computed on the spot would return."""

from collections.abc import Iterable, Sequence
from functools import lru_cache

from sqlalchemy import BindParameter, Insert, Table, bindparam, delete, func, insert, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.db.board_models import LeaderboardEntry
from specdash.db.bulk import chunks
from specdash.db.leaderboard_sql import STORED, stored_rows
from specdash.db.queries import prediction_sources

TABLE: Table = LeaderboardEntry.__table__  # type: ignore[assignment]
# checkpoints rewritten per statement: a refresh batch's (~10,000 benchmarks) in one or a few
CHECKPOINTS = 1000


def sources(session: Session) -> list[str]:
    """The sources a Leaderboard is shown for: those with gaps, and theory always (the page's default)."""
    names = prediction_sources(session)
    return names if PredictionSource.THEORY in names else [PredictionSource.THEORY, *names]


def holds(session: Session, source: str) -> bool:
    """Whether the store holds entries of this source (a few index steps)."""
    return session.scalar(select(select(TABLE.c.source).where(TABLE.c.source == source).exists())) or False


def stored_sources(session: Session) -> set[str]:
    """The sources of the stored entries, walked on the primary key: the next source after each."""
    found: set[str] = set()
    name = session.scalar(select(func.min(TABLE.c.source)))
    while name is not None:
        found.add(name)
        name = session.scalar(select(func.min(TABLE.c.source)).where(TABLE.c.source > name))
    return found


def update(session: Session, checkpoint_ids: Iterable[int] | None) -> None:
    """Rewrite the stored entries of these checkpoints (None: every entry) from the store as it is now."""
    stored = stored_sources(session)
    shown = sources(session)
    ids = None if checkpoint_ids is None else sorted(set(checkpoint_ids))
    for source in shown:
        _rewrite(session, source, ids if source in stored else None)
    for source in stored - set(shown):  # a source whose gaps are gone
        session.execute(delete(TABLE).where(TABLE.c.source == source))


def forget(session: Session, checkpoint_ids: Iterable[int]) -> None:
    """Delete the stored entries of checkpoints about to be deleted (whatever the cascade settings)."""
    for chunk in chunks(sorted(set(checkpoint_ids))):
        session.execute(delete(TABLE).where(TABLE.c.checkpoint_id.in_(chunk)))


def _rewrite(session: Session, source: str, checkpoint_ids: Sequence[int] | None) -> None:
    if checkpoint_ids is None:
        session.execute(delete(TABLE).where(TABLE.c.source == source))
        session.execute(_insert(source, False))
        return
    for chunk in chunks(checkpoint_ids, CHECKPOINTS):
        session.execute(delete(TABLE).where(TABLE.c.source == source, TABLE.c.checkpoint_id.in_(chunk)))
        session.execute(_insert(source, True), {"checkpoints": list(chunk)})


@lru_cache(maxsize=32)
def _insert(source: str, some: bool) -> Insert:
    """The INSERT of a source's entries (of the checkpoints bound as `checkpoints` when `some`), built once:
    the statement is a few hundred elements, longer to build than to run for one checkpoint."""
    checkpoints: BindParameter[list[int]] | None = bindparam("checkpoints", expanding=True) if some else None
    return insert(TABLE).from_select(["source", "rank_by", *STORED], stored_rows(source, checkpoints))
