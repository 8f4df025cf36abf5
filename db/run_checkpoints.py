"""Each run's checkpoints in summary (db/summary_models.py RunCheckpoints): how many, the latest (highest
step, else the newest stored) and the newest stored, rewritten from the run's own checkpoints by the ingest
that creates or changes them and deleted with the run (db/runs.py). Revision 0018 fills them from the store."""

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Select, Table, delete, func, insert, select
from sqlalchemy.orm import Session

from specdash.db.bulk import chunks
from specdash.db.models import Checkpoint
from specdash.db.summary_models import RunCheckpoints

TABLE: Table = RunCheckpoints.__table__  # type: ignore[assignment]
COLUMNS = ("run_id", "checkpoints", "latest_checkpoint_id", "newest_checkpoint_id")


def _summarised(*where: Any) -> Select:
    """Per run with a checkpoint `where` selects: how many it has, its latest (highest step, else newest
    id) and its newest (highest id), in the order of COLUMNS. Window functions over the runs' checkpoints
    (their run index): the computation the stored rows spare the pages."""
    ranked = select(
        Checkpoint.run_id,
        func.count().over(partition_by=Checkpoint.run_id).label("checkpoints"),
        Checkpoint.id.label("latest_checkpoint_id"),
        func.max(Checkpoint.id).over(partition_by=Checkpoint.run_id).label("newest_checkpoint_id"),
        func.row_number()
        .over(
            partition_by=Checkpoint.run_id,
            order_by=(func.coalesce(Checkpoint.step, -1).desc(), Checkpoint.id.desc()),
        )
        .label("rank"),
    ).where(*where)
    ranks = ranked.subquery()
    return select(*(ranks.c[name] for name in COLUMNS)).where(ranks.c.rank == 1)


def update(session: Session, run_ids: Iterable[int]) -> None:
    """Rewrite the rows of these runs from their checkpoints as stored now (one created, a step changed)."""
    session.flush()  # checkpoints the ORM holds are read back below
    connection = session.connection()
    for chunk in chunks(sorted(set(run_ids))):
        connection.execute(delete(TABLE).where(TABLE.c.run_id.in_(chunk)))
        connection.execute(insert(TABLE).from_select(COLUMNS, _summarised(Checkpoint.run_id.in_(chunk))))


def forget(session: Session, run_ids: Iterable[int]) -> None:
    """Delete the rows of runs about to be deleted (whatever the cascade settings)."""
    for chunk in chunks(sorted(set(run_ids))):
        session.execute(delete(TABLE).where(TABLE.c.run_id.in_(chunk)))


def stored(session: Session) -> set[tuple[int, int, int, int]]:
    """The stored rows, as (run, checkpoints, latest checkpoint, newest checkpoint)."""
    query = select(*(TABLE.c[name] for name in COLUMNS))
    return {(row[0], row[1], row[2], row[3]) for row in session.execute(query)}
