"""The Overview's summary rows (db/parity_counts.py, db/run_checkpoints.py) against a plain recount of the
store, and a walk through every kind of write that changes them, checked after each (SQLite and
PostgreSQL run the same walk)."""

from sqlalchemy import Engine, select, text

from specdash.answers.edits import delete_ingested_file
from specdash.answers.refresh import refresh
from specdash.db import parity_counts, run_checkpoints
from specdash.db.alerts import link_superseding
from specdash.db.engine import reading, transaction
from specdash.db.models import Benchmark, Checkpoint, IngestedFile, Run
from specdash.db.runs import delete_runs, set_archived
from specdash.demo import DEMO_FILE_NAME, PCIE, RUN_10K, RUN_TTT5, demo_bytes
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnConflict
from specdash.ingest.sources import UploadSource
from tests.ingest_support import native

PARITY = text(
    "SELECT p.source, count(*) FROM gap g"
    " JOIN benchmark b ON b.id = g.benchmark_id JOIN prediction p ON p.id = g.prediction_id"
    " WHERE b.superseded_by_id IS NULL GROUP BY p.source"
)
CHECKPOINTS = text("SELECT run_id, id, step FROM checkpoint")


def recount(engine: Engine) -> tuple[dict[str, int], set[tuple[int, int, int, int]]]:
    """Each source's gaps on benchmarks not superseded, and per run: its checkpoints, the latest (highest
    step, else highest id) and the newest (highest id), worked out here from the plain rows."""
    with engine.connect() as connection:
        parity = {source: count for source, count in connection.execute(PARITY)}
        by_run: dict[int, list[tuple[int, int | None]]] = {}
        for run_id, checkpoint_id, step in connection.execute(CHECKPOINTS):
            by_run.setdefault(run_id, []).append((checkpoint_id, step))
    runs = set()
    for run_id, rows in by_run.items():
        latest = max(rows, key=lambda row: (row[1] if row[1] is not None else -1, row[0]))
        runs.add((run_id, len(rows), latest[0], max(row[0] for row in rows)))
    return parity, runs


def assert_kept(engine: Engine, step: str) -> dict[str, int]:
    """The stored summary rows equal the recount; returns the parity counts."""
    parity, runs = recount(engine)
    with reading(engine) as session:
        assert parity_counts.stored(session) == parity, step
        assert run_checkpoints.stored(session) == runs, step
    return parity


def second_file(decode_tps: float) -> bytes:
    """A later checkpoint of the TTT-5 run (the run's latest now) with two benchmarks, a rerun at the demo's
    epoch_5 (to supersede one of the demo's with), and a checkpoint with no step in the 10k run."""
    bench = {
        "kind": "benchmark",
        "run": RUN_TTT5,
        "checkpoint": "epoch_6",
        "deployment": PCIE,
        "speculative_algorithm": "EAGLE3",
        "num_steps": 3,
        "topk": 1,
        "num_draft_tokens": 4,
        "concurrency": 1,
        "dataset": "mtbench",
        "accept_length": 2.6,
        "decode_tps": decode_tps,
    }
    return native(
        {"kind": "checkpoint", "run": RUN_TTT5, "name": "epoch_6", "epoch": 6, "step": 12000},
        {"kind": "checkpoint", "run": RUN_10K, "name": "unnumbered"},
        bench,
        {**bench, "num_steps": 5, "num_draft_tokens": 6, "decode_tps": decode_tps * 1.1},
        {**bench, "checkpoint": "epoch_5", "num_steps": 4, "num_draft_tokens": 5, "label": "rerun"},
    )


def ingested(engine: Engine, name: str, data: bytes, policy: IngestPolicy | None = None) -> None:
    result = ingest(engine, UploadSource(name, data), policy or IngestPolicy())
    assert result.ok, result.problems


def file_id(session, name: str) -> int:
    found = session.scalar(select(IngestedFile.id).where(IngestedFile.path.like(f"%{name}")))
    assert found is not None
    return found


def supersede(engine: Engine, old: int, new: int) -> None:
    with transaction(engine) as session:
        link_superseding(session, old, new, "ana")


def walk(engine: Engine) -> None:
    """Every kind of write that changes a summary row, the rows checked against the recount after each."""
    assert_kept(engine, "empty")
    ingested(engine, DEMO_FILE_NAME, demo_bytes())
    demo = assert_kept(engine, "ingest")
    assert demo["theory"] > 0 and demo["roofline-sim"] > 0
    ingested(engine, "later.jsonl", second_file(180.0))
    later = assert_kept(engine, "a second file")
    assert later["theory"] == demo["theory"] + 3
    with reading(engine) as session:
        epoch_5, epoch_6 = (
            session.scalar(select(Checkpoint.id).where(Checkpoint.name == name))
            for name in ("epoch_5", "epoch_6")
        )
        ttt5 = session.scalar(select(Run.id).where(Run.name == RUN_TTT5))
        assert (ttt5, 6, epoch_6, epoch_6) in run_checkpoints.stored(session)
        first, *_ = benchmarks(session, epoch_5, "specdash-demo")
    supersede(engine, first, rerun_of(engine, epoch_5))
    assert assert_kept(engine, "supersede")["theory"] == later["theory"] - 1
    # the same file again, replaced: its benchmarks removed (gaps by the cascade; the one its rerun
    # superseded is superseded no more), then stored anew
    ingested(engine, "later.jsonl", second_file(180.0), IngestPolicy(on_conflict=OnConflict.REPLACE))
    kept = assert_kept(engine, "re-ingest")
    assert kept == later, (kept, later)
    supersede(engine, first, rerun_of(engine, epoch_5))
    with reading(engine) as session:
        old, new = benchmarks(session, epoch_6, "later")
    supersede(engine, old, new)
    assert assert_kept(engine, "supersede twice")["theory"] == later["theory"] - 2
    # a checkpoint's step changed by --update: the TTT-5 run's latest moves back to epoch_5
    step_back = native({"kind": "checkpoint", "run": RUN_TTT5, "name": "epoch_6", "epoch": 6, "step": 1})
    ingested(engine, "step.jsonl", step_back, IngestPolicy(on_conflict=OnConflict.UPDATE))
    with reading(engine) as session:
        assert (ttt5, 6, epoch_5, epoch_6) in run_checkpoints.stored(session)
    assert_kept(engine, "a step changed")
    with transaction(engine) as session:
        set_archived(session, [ttt5], True)
    assert_kept(engine, "archive")
    with transaction(engine) as session:
        refresh(session)
    assert_kept(engine, "a full refresh")
    with transaction(engine) as session:  # the superseding benchmarks go: the demo's counts again
        delete_ingested_file(session, file_id(session, "later.jsonl"))
    assert assert_kept(engine, "undo an ingest") == demo
    supersede(engine, 3, 4)  # the demo's EAGLE-flag benchmark and its rerun (tests/db/test_alerts.py)
    assert_kept(engine, "supersede in the demo")
    with transaction(engine) as session:
        delete_runs(session, [session.scalar(select(Run.id).where(Run.name == RUN_10K))])
    assert_kept(engine, "delete a run")
    # epoch_6 stayed with its run (an undone ingest keeps checkpoints): its step is the file's again
    ingested(engine, "again.jsonl", second_file(150.0), IngestPolicy(on_conflict=OnConflict.UPDATE))
    assert_kept(engine, "a checkpoint into a run that had lost its row")
    with transaction(engine) as session:
        delete_runs(session, list(session.scalars(select(Run.id))))
    assert assert_kept(engine, "every run deleted") == {}


def benchmarks(session, checkpoint_id: int, file_name: str) -> list[int]:
    """The benchmarks of a checkpoint a file stored that are not superseded, by id."""
    query = (
        select(Benchmark.id)
        .join(IngestedFile, IngestedFile.id == Benchmark.ingested_file_id)
        .where(
            Benchmark.checkpoint_id == checkpoint_id,
            Benchmark.superseded_by_id.is_(None),
            IngestedFile.path.like(f"%{file_name}%"),
        )
        .order_by(Benchmark.id)
    )
    return list(session.scalars(query))


def rerun_of(engine: Engine, checkpoint_id: int) -> int:
    with reading(engine) as session:
        (rerun,) = benchmarks(session, checkpoint_id, "later")
    return rerun
