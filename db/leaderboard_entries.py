"""The Leaderboard's stored entries (db/leaderboard_models.py): rewritten by every refresh for the checkpoints it
touched, for every prediction source with gaps (a source without stored entries yet gets all of them), and
deleted with their checkpoints. The ranking itself is db/leaderboard_ranking.py's, so a stored view holds what
the ranking computed on the spot would return."""

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache

from sqlalchemy import BindParameter, Insert, Table, bindparam, delete, func, insert, select
from sqlalchemy.orm import Session

from specdash.costmodel.domain import PredictionSource
from specdash.db.bulk import chunks
from specdash.db.leaderboard_models import LeaderboardEntry
from specdash.db.leaderboard_ranking import STORED, Places, stored_rows
from specdash.db.queries import prediction_sources

TABLE: Table = LeaderboardEntry.__table__  # type: ignore[assignment]
# checkpoints rewritten per statement: a refresh batch's (~10,000 benchmarks) in one or a few
CHECKPOINTS = 1000
# update_at: checkpoints touched at up to FEW_PLACES (deployment, load) places are rewritten there only,
# in up to PLACE_GROUPS statements (each also reads the baselines there)
FEW_PLACES, PLACE_GROUPS = 8, 8


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
    _update(session, None if checkpoint_ids is None else sorted(set(checkpoint_ids)), None)


def update_at(session: Session, batches: Sequence[Mapping[int, Collection[tuple[int, int]]]]) -> None:
    """Rewrite the stored entries of each refresh batch's checkpoints only at these (deployment, load)
    places each (an entry is computed from the benchmarks and baselines at its own deployment and load):
    checkpoints touched at the same few places in one statement, the others (or all, when that would take
    many statements) whole. Called once the batches are written: a source without stored entries yet gets
    all of them once, not once and then again for every later batch's checkpoints."""
    if not any(batches):
        return
    stored = stored_sources(session)
    shown = sources(session)
    for source in shown:
        if source not in stored:
            _rewrite(session, source, None, None)
    for source in stored - set(shown):  # a source whose gaps are gone
        session.execute(delete(TABLE).where(TABLE.c.source == source))
    kept = [source for source in shown if source in stored]
    for ids, where in _merged_groups(batches):
        for source in kept:
            _rewrite(session, source, ids, where)


def _merged_groups(
    batches: Sequence[Mapping[int, Collection[tuple[int, int]]]],
) -> list[tuple[list[int], Places | None]]:
    """Every batch's groups (_place_groups), those rewritten whole merged into one: each statement computes
    the baselines' medians over the whole store again (a 300,000-benchmark file's six drafters, one batch
    each, took 10.0 s CPU in six statements and 7.2 s in one)."""
    whole: set[int] = set()
    placed: list[tuple[list[int], Places | None]] = []
    for places in batches:
        for ids, where in _place_groups(places):
            if where is None:
                whole.update(ids)
            else:
                placed.append((ids, where))
    rest = [(kept, where) for ids, where in placed if (kept := [i for i in ids if i not in whole])]
    return ([(sorted(whole), None)] if whole else []) + rest


def _place_groups(places: Mapping[int, Collection[tuple[int, int]]]) -> list[tuple[list[int], Places | None]]:
    """The checkpoints rewritten together, and the places they are rewritten at (None: whole)."""
    together: dict[frozenset[tuple[int, int]] | None, list[int]] = defaultdict(list)
    for checkpoint_id, at in places.items():
        few = frozenset(at)
        together[few if len(few) <= FEW_PLACES else None].append(checkpoint_id)
    if len(together) > PLACE_GROUPS:
        together = {None: list(places)}
    return [
        (
            sorted(ids),
            None if key is None else Places(sorted({d for d, _ in key}), sorted({n for _, n in key})),
        )
        for key, ids in together.items()
    ]


def _update(session: Session, ids: list[int] | None, places: Places | None) -> None:
    stored = stored_sources(session)
    shown = sources(session)
    for source in shown:
        if source in stored:
            _rewrite(session, source, ids, places)
        else:
            _rewrite(session, source, None, None)
    for source in stored - set(shown):  # a source whose gaps are gone
        session.execute(delete(TABLE).where(TABLE.c.source == source))


def forget(session: Session, checkpoint_ids: Iterable[int]) -> None:
    """Delete the stored entries of checkpoints about to be deleted (whatever the cascade settings)."""
    for chunk in chunks(sorted(set(checkpoint_ids))):
        session.execute(delete(TABLE).where(TABLE.c.checkpoint_id.in_(chunk)))


def _rewrite(
    session: Session, source: str, checkpoint_ids: Sequence[int] | None, places: Places | None
) -> None:
    if checkpoint_ids is None:
        session.execute(delete(TABLE).where(TABLE.c.source == source))
        session.execute(_insert(source, False, False))
        return
    at = {}
    where = [TABLE.c.source == source]
    if places is not None:
        at = {"deployments": list(places.deployment_ids), "loads": list(places.loads)}
        where += [TABLE.c.deployment_id.in_(places.deployment_ids), TABLE.c.concurrency.in_(places.loads)]
    for chunk in chunks(checkpoint_ids, CHECKPOINTS):
        session.execute(delete(TABLE).where(*where, TABLE.c.checkpoint_id.in_(chunk)))
        session.execute(_insert(source, True, places is not None), {"checkpoints": list(chunk), **at})


@lru_cache(maxsize=32)
def _insert(source: str, some: bool, placed: bool) -> Insert:
    """The INSERT of a source's entries (of the checkpoints bound as `checkpoints` when `some`; and at the
    `deployments` and `loads` bound when `placed`), built once: the statement is a few hundred elements,
    longer to build than to run for one checkpoint."""
    checkpoints: BindParameter[list[int]] | None = bindparam("checkpoints", expanding=True) if some else None
    places = Places(bindparam("deployments", expanding=True), bindparam("loads", expanding=True))
    rows = stored_rows(source, checkpoints, places if placed else None)
    return insert(TABLE).from_select(["source", "rank_by", *STORED], rows)
