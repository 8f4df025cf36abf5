"""The parity plot's counts per prediction source (db/summary_models.py ParityCount), kept by the writes that
change them in their own transaction: gaps inserted (db/stored.py), a benchmark superseded (db/alerts.py),
gaps and benchmarks deleted (db/runs.py, an ingest replaced). Revision 0018 fills them from the store."""

from collections.abc import Mapping

from sqlalchemy import ColumnElement, Select, Table, bindparam, delete, func, insert, not_, select, update
from sqlalchemy.orm import Session

from specdash.db.models import Benchmark, Gap, Prediction
from specdash.db.summary_models import ParityCount

TABLE: Table = ParityCount.__table__  # type: ignore[assignment]
NOT_SUPERSEDED = Benchmark.superseded_by_id.is_(None)
# built once (the Overview reads it on every render): one built per call cost more than its row
_COUNTED = select(TABLE.c.benchmarks).where(TABLE.c.source == bindparam("source"))


def counted(session: Session, source: str) -> int:
    """How many benchmarks (not superseded) have a gap of `source`: one row read."""
    return session.connection().execute(_COUNTED, {"source": source}).scalar() or 0


def stored(session: Session) -> dict[str, int]:
    """Every source's stored count."""
    return {source: count for source, count in session.execute(select(TABLE.c.source, TABLE.c.benchmarks))}


def _per_source(session: Session, *where: ColumnElement[bool]) -> dict[str, int]:
    """How many gaps `where` selects, per source of their prediction (joined with their benchmark)."""
    query = (
        select(Prediction.source, func.count())
        .select_from(Gap)
        .join(Benchmark, Gap.benchmark_id == Benchmark.id)
        .join(Prediction, Gap.prediction_id == Prediction.id)
        .where(*where)
        .group_by(Prediction.source)
    )
    return {source: count for source, count in session.execute(query)}


def _add(session: Session, counts: Mapping[str, int], sign: int) -> None:
    """Add `sign` times `counts` to the stored counts; a source whose count falls to 0 loses its row."""
    connection = session.connection()
    for source, count in counts.items():
        if not count:
            continue
        moved = connection.execute(
            update(TABLE).where(TABLE.c.source == source).values(benchmarks=TABLE.c.benchmarks + sign * count)
        )
        if not moved.rowcount:
            connection.execute(insert(TABLE).values(source=source, benchmarks=sign * count))
    connection.execute(delete(TABLE).where(TABLE.c.benchmarks == 0))


def gaps_inserted(session: Session, above_id: int) -> None:
    """Count the gaps just inserted, those with ids above `above_id` (a refresh holds the write lock, so
    they are its own): a range of the primary key, not the whole table."""
    _add(session, _per_source(session, Gap.id > above_id, NOT_SUPERSEDED), 1)


def superseding(session: Session, benchmark_id: int) -> None:
    """Before a benchmark that is not superseded becomes so: its gaps leave the counts."""
    _add(session, _per_source(session, Gap.benchmark_id == benchmark_id, NOT_SUPERSEDED), -1)


def deleting(session: Session, gaps: ColumnElement[bool], benchmark_ids: Select) -> None:
    """Before the gaps `gaps` selects and the benchmarks `benchmark_ids` selects are deleted (`gaps` takes
    in every gap of those benchmarks): those gaps leave the counts, and the gaps of the benchmarks the
    deleted ones superseded (superseded no more once their rerun is gone) join them, but for those
    deleted too."""
    _add(session, _per_source(session, gaps, NOT_SUPERSEDED), -1)
    freed = _per_source(session, Benchmark.superseded_by_id.in_(benchmark_ids), not_(gaps))
    _add(session, freed, 1)


def deleting_benchmarks(session: Session, benchmark_ids: Select) -> None:
    """deleting() of these benchmarks and their gaps (an ingest undone or replaced)."""
    deleting(session, Gap.benchmark_id.in_(benchmark_ids), benchmark_ids)
