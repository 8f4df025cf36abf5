"""Run management from the dashboard: runs listed by target model with tags and a search, archiving, and
deleting a run or an ingested file (undoing an ingest) with the rows it would remove counted first."""

from dataclasses import dataclass
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from specdash.db import leaderboard_entries, loadmodels, parity_counts, run_checkpoints
from specdash.db.changes import record_change
from specdash.db.live_models import Advisory
from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Gap,
    IngestedFile,
    MetricPoint,
    MetricRollup,
    PositionAcceptance,
    Prediction,
    Run,
    utcnow,
)
from specdash.db.rows import rows_of

MAX_TAG = 40


class RunChangeError(ValueError):
    """A run or file that is not there, or a bad tag."""


@dataclass(frozen=True)
class Removal:
    """What a delete would remove, table by table (cascades included), before it is done."""

    what: str
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


class RunListing(NamedTuple):
    """A run as the Runs page lists it: what it trained, its tags, whether archived, what it holds."""

    id: int
    name: str
    target_model: str | None
    framework: str | None
    status: str
    ttt_length: int | None
    tags: list[str]
    archived_at: datetime | None
    created_at: datetime
    checkpoints: int
    benchmarks: int


class IngestedFileEntry(NamedTuple):
    """An ingested file, who ingested it and when, and how many of its benchmarks are still stored."""

    id: int
    path: str
    format: str
    records: int
    size_bytes: int
    ingested_at: datetime
    ingested_by: str | None
    benchmarks: int


def runs_table(session: Session, search: str = "", include_archived: bool = False) -> list[RunListing]:
    """Runs grouped by target model (runs without one last), with checkpoints, benchmarks, tags and
    whether archived; `search` matches the run name, target, framework or a tag (case-insensitive)."""
    checkpoints = (
        select(Checkpoint.run_id, func.count().label("checkpoints")).group_by(Checkpoint.run_id).subquery()
    )
    benchmarks = (
        select(Checkpoint.run_id, func.count(Benchmark.id).label("benchmarks"))
        .join(Benchmark, Benchmark.checkpoint_id == Checkpoint.id)
        .group_by(Checkpoint.run_id)
        .subquery()
    )
    query = (
        select(
            Run.id,
            Run.name,
            Run.target_model,
            Run.framework,
            Run.status,
            Run.ttt_length,
            Run.tags,
            Run.archived_at,
            Run.created_at,
            func.coalesce(checkpoints.c.checkpoints, 0).label("checkpoints"),
            func.coalesce(benchmarks.c.benchmarks, 0).label("benchmarks"),
        )
        .outerjoin(checkpoints, checkpoints.c.run_id == Run.id)
        .outerjoin(benchmarks, benchmarks.c.run_id == Run.id)
        .order_by(Run.target_model.is_(None), Run.target_model, Run.name)
    )
    if not include_archived:
        query = query.where(Run.archived_at.is_(None))
    runs = [
        RunListing._make((*row[:6], list(row[6] or []), *row[7:]))
        for row in session.connection().execute(query)
    ]
    words = search.strip().lower().split()
    if not words:
        return runs
    return [run for run in runs if all(word in _searched_text(run) for word in words)]


def _searched_text(run: RunListing) -> str:
    """What a search matches: the run's name, target, framework and tags, lower-case."""
    return " ".join([run.name or "", run.target_model or "", run.framework or "", " ".join(run.tags)]).lower()


def _run(session: Session, run_id: int) -> Run:
    run = session.get(Run, run_id)
    if run is None:
        raise RunChangeError(f"run: no run with id {run_id}")
    return run


def set_tags(session: Session, run_id: int, tags: list[str]) -> list[str]:
    """Replace the run's tags: trimmed, lower-case, each once, in the order given."""
    clean: list[str] = []
    for tag in tags:
        tag = str(tag).strip().lower()
        if not tag:
            continue
        if len(tag) > MAX_TAG:
            raise RunChangeError(f"tags: {tag[:20]!r}... is longer than {MAX_TAG} characters")
        if tag not in clean:
            clean.append(tag)
    run = _run(session, run_id)
    if (run.tags or []) != clean:
        record_change(session, "tags", "run", run.name, "tags", run.tags or [], clean)
    run.tags = clean or None
    return clean


def set_archived(session: Session, run_ids: list[int], archived: bool) -> int:
    """Archive runs (hidden from the pickers and the leaderboard, nothing deleted) or bring them back."""
    count = 0
    for run_id in run_ids:
        run = _run(session, run_id)
        if (run.archived_at is not None) != archived:
            record_change(
                session,
                "archive" if archived else "unarchive",
                "run",
                run.name,
                "archived",
                not archived,
                archived,
            )
        run.archived_at = (run.archived_at or utcnow()) if archived else None
        count += 1
    return count


def archived_run_ids(session: Session) -> list[int]:
    return list(session.scalars(select(Run.id).where(Run.archived_at.is_not(None))))


def _count(session: Session, model, *where) -> int:
    return session.scalar(select(func.count()).select_from(model).where(*where)) or 0


def run_removal(session: Session, run_ids: list[int]) -> Removal:
    """Every row deleting these runs removes: their checkpoints and what hangs on them (benchmarks, their
    gaps and alerts, predictions, per-position acceptance) and their training metrics."""
    runs = session.scalars(select(Run).where(Run.id.in_(run_ids))).all()
    if len(runs) != len(set(run_ids)):
        raise RunChangeError("run: some of these runs are not stored")
    checkpoint_ids = select(Checkpoint.id).where(Checkpoint.run_id.in_(run_ids))
    benchmark_ids = select(Benchmark.id).where(Benchmark.checkpoint_id.in_(checkpoint_ids))
    prediction_ids = select(Prediction.id).where(Prediction.checkpoint_id.in_(checkpoint_ids))
    rows = {
        "runs": len(runs),
        "checkpoints": _count(session, Checkpoint, Checkpoint.run_id.in_(run_ids)),
        "benchmarks": _count(session, Benchmark, Benchmark.id.in_(benchmark_ids)),
        "predictions": _count(session, Prediction, Prediction.id.in_(prediction_ids)),
        "gaps and alerts": _count(
            session, Gap, or_(Gap.benchmark_id.in_(benchmark_ids), Gap.prediction_id.in_(prediction_ids))
        ),
        "per-position acceptance": _count(
            session, PositionAcceptance, PositionAcceptance.checkpoint_id.in_(checkpoint_ids)
        ),
        "metric points": _count(session, MetricPoint, MetricPoint.run_id.in_(run_ids)),
        "depth advisories": _count(session, Advisory, Advisory.run_id.in_(run_ids)),
    }
    names = ", ".join(sorted(r.name for r in runs))
    return Removal(what=f"run(s) {names}", rows=rows)


def delete_runs(session: Session, run_ids: list[int]) -> Removal:
    """Delete the runs and everything that hangs on them (the database's cascades); returns what went."""
    removal = run_removal(session, run_ids)
    checkpoint_ids = select(Checkpoint.id).where(Checkpoint.run_id.in_(run_ids))
    # children first, so the same rows go on SQLite and PostgreSQL whatever the cascade settings
    benchmark_ids = select(Benchmark.id).where(Benchmark.checkpoint_id.in_(checkpoint_ids))
    prediction_ids = select(Prediction.id).where(Prediction.checkpoint_id.in_(checkpoint_ids))
    gaps = or_(Gap.benchmark_id.in_(benchmark_ids), Gap.prediction_id.in_(prediction_ids))
    parity_counts.deleting(session, gaps, benchmark_ids)
    session.execute(delete(Gap).where(gaps))
    session.execute(
        update(Benchmark)
        .where(Benchmark.superseded_by_id.in_(benchmark_ids))
        .values(superseded_by_id=None)
        .execution_options(synchronize_session=False)
    )
    session.execute(delete(Benchmark).where(Benchmark.id.in_(benchmark_ids)))
    loadmodels.recheck_fits(session)  # a load fit's data may have lost benchmarks
    session.execute(delete(Prediction).where(Prediction.id.in_(prediction_ids)))
    session.execute(delete(PositionAcceptance).where(PositionAcceptance.checkpoint_id.in_(checkpoint_ids)))
    leaderboard_entries.forget(session, session.scalars(checkpoint_ids).all())
    run_checkpoints.forget(session, run_ids)
    session.execute(delete(MetricRollup).where(MetricRollup.run_id.in_(run_ids)))
    session.execute(delete(MetricPoint).where(MetricPoint.run_id.in_(run_ids)))
    session.execute(delete(Checkpoint).where(Checkpoint.run_id.in_(run_ids)))
    session.execute(delete(Run).where(Run.id.in_(run_ids)))
    session.expire_all()
    record_change(session, "delete", "run", removal.what, note=_removed(removal))
    return removal


def _removed(removal: Removal) -> str:
    return "removed " + ", ".join(f"{what}: {count}" for what, count in removal.rows.items() if count)


def ingested_files(session: Session) -> list[IngestedFileEntry]:
    """Every ingested file, newest first, with how many of its benchmarks are still stored."""
    stored = (
        select(Benchmark.ingested_file_id, func.count().label("benchmarks"))
        .group_by(Benchmark.ingested_file_id)
        .subquery()
    )
    query = (
        select(
            IngestedFile.id,
            IngestedFile.path,
            IngestedFile.format,
            IngestedFile.records,
            IngestedFile.size_bytes,
            IngestedFile.ingested_at,
            IngestedFile.ingested_by,
            func.coalesce(stored.c.benchmarks, 0).label("benchmarks"),
        )
        .outerjoin(stored, stored.c.ingested_file_id == IngestedFile.id)
        .order_by(IngestedFile.ingested_at.desc(), IngestedFile.id.desc())
    )
    return rows_of(session, query, IngestedFileEntry)


def file_removal(session: Session, file_id: int) -> Removal:
    """What undoing an ingest removes: the file's benchmarks and their gaps, and the file's record (so it
    can be ingested again). Runs, checkpoints and metrics it created stay (delete the run for those)."""
    stored = session.get(IngestedFile, file_id)
    if stored is None:
        raise RunChangeError(f"file: no ingested file with id {file_id}")
    benchmark_ids = select(Benchmark.id).where(Benchmark.ingested_file_id == file_id)
    rows = {
        "ingested files": 1,
        "benchmarks": _count(session, Benchmark, Benchmark.ingested_file_id == file_id),
        "gaps and alerts": _count(session, Gap, Gap.benchmark_id.in_(benchmark_ids)),
    }
    return Removal(what=f"file {stored.path}", rows=rows)


def file_checkpoints(session: Session, file_id: int) -> list[int]:
    """The checkpoints an ingested file's benchmarks are of."""
    query = select(Benchmark.checkpoint_id).where(
        Benchmark.ingested_file_id == file_id, Benchmark.checkpoint_id.is_not(None)
    )
    return list(session.scalars(query.distinct()))


def delete_ingested_file(session: Session, file_id: int) -> tuple[Removal, list[int]]:
    """Undo an ingest: delete the file's benchmarks (their gaps with them) and its record; returns the
    remaining benchmarks of the deployments it touched, to refresh (answers/edits.py), since a removed
    no-speculation baseline changes their predictions."""
    removal = file_removal(session, file_id)
    benchmark_ids = select(Benchmark.id).where(Benchmark.ingested_file_id == file_id)
    deployments = set(
        session.scalars(
            select(Benchmark.deployment_id).where(Benchmark.ingested_file_id == file_id).distinct()
        )
    )
    checkpoints = file_checkpoints(session, file_id)
    parity_counts.deleting_benchmarks(session, benchmark_ids)
    session.execute(delete(Gap).where(Gap.benchmark_id.in_(benchmark_ids)))
    session.execute(
        update(Benchmark)
        .where(Benchmark.superseded_by_id.in_(benchmark_ids))
        .values(superseded_by_id=None)
        .execution_options(synchronize_session=False)
    )
    session.execute(delete(Benchmark).where(Benchmark.ingested_file_id == file_id))
    loadmodels.recheck_fits(session)  # a load fit's data may have lost benchmarks
    session.execute(delete(IngestedFile).where(IngestedFile.id == file_id))
    session.expire_all()
    record_change(session, "undo ingest", "file", removal.what, note=_removed(removal))
    leaderboard_entries.update(
        session, checkpoints
    )  # a checkpoint left without benchmarks there is refreshed by none
    remaining = list(session.scalars(select(Benchmark.id).where(Benchmark.deployment_id.in_(deployments))))
    return removal, remaining
