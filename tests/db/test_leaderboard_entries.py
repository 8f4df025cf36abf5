"""The Leaderboard's stored entries (db/leaderboard_entries.py) give what the ranking computed from the benchmarks gives
(the pandas reference, tests/db/leaderboard_reference.py), for every filter, a page at a time; and every
write that changes a ranking keeps them so: a refresh after an ingest, a new baseline, an undone ingest, a
deleted run, a checkpoint rewritten after its benchmarks changed, a superseded benchmark, a refresh of all
that changed one deployment's predictions."""

from dataclasses import replace

import pytest
from sqlalchemy import and_, func, select, text

from specdash.answers.edits import delete_ingested_file, supersede
from specdash.answers.refresh import refresh
from specdash.app.board_frames import board_frame, choices_frame
from specdash.db import leaderboard_entries
from specdash.db.deploy import DEPLOY_COLUMNS, deploy_table
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.leaderboard import LeaderboardFilter, leaderboard, leaderboard_size
from specdash.db.leaderboard_models import LeaderboardEntry
from specdash.db.leaderboard_ranking import SETTING
from specdash.db.models import Alert, Benchmark, Checkpoint, Deployment, IngestedFile, ParameterSet, Run
from specdash.db.runs import delete_runs
from specdash.db.schema import upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.app_support import specbundle_rows
from tests.db.leaderboard_reference import pandas_deploy_table, pandas_leaderboard
from tests.db.test_leaderboard_ranking import assert_same, build_store, filters
from tests.ingest_support import native

pytestmark = pytest.mark.slow

LLAMA8B = "Llama-3.1-8B-Instruct"


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The varied store of tests/db/test_leaderboard_ranking.py with its entries stored."""
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('board') / 'stored.db'}")
    upgrade(engine)
    build_store(engine)
    with transaction(engine) as session:
        leaderboard_entries.update(session, None)
    yield engine
    engine.dispose()


def same_as_computed(session, flt: LeaderboardFilter) -> int:
    expected = pandas_leaderboard(session, flt)
    assert_same(board_frame(leaderboard(session, flt)), expected)
    return len(expected)


def test_every_view_stored_is_the_ranking_computed(stored):
    compared = 0
    with reading(stored) as session:
        assert leaderboard_entries.stored_sources(session) == {"theory", "calibrated", "roofline-sim"}
        for flt in filters(stored):
            compared += same_as_computed(session, flt)
    assert compared > 1000


def test_an_entry_on_one_dataset_is_stored_once(stored):
    """Across datasets and on its dataset it ranks the same: one row names the dataset and stands for both."""
    with reading(stored) as session:
        one = select(func.count()).where(
            LeaderboardEntry.across.is_(True), LeaderboardEntry.dataset != "", LeaderboardEntry.datasets == 1
        )
        several = select(func.count()).where(LeaderboardEntry.across.is_(False))
        assert session.scalar(one) > 0 and session.scalar(several) > 0
        for flt in [
            LeaderboardFilter(dataset="gsm8k"),
            LeaderboardFilter(dataset="mtbench", rank_by="predicted"),
        ]:
            table = board_frame(leaderboard(session, flt))
            assert set(table["datasets"]) == {1} and len(table) == len(pandas_leaderboard(session, flt))


def test_a_page_is_a_slice_of_the_ranking(stored):
    with reading(stored) as session:
        for flt in [LeaderboardFilter(), LeaderboardFilter(source="calibrated", rank_by="predicted")]:
            every = board_frame(leaderboard(session, flt))
            page = board_frame(leaderboard(session, flt, 5, 7))
            assert page["rank"].tolist() == list(range(6, 13))
            assert_same(page.reset_index(drop=True), every.iloc[5:12].reset_index(drop=True))
            assert leaderboard_size(session, flt) == len(every) > 12
            assert board_frame(leaderboard(session, flt, len(every), 50)).empty


def test_the_deploy_answer_from_stored_entries(stored):
    with reading(stored) as session:
        for flt in filters(stored):
            if flt.rank_by == "measured":
                assert_same(
                    choices_frame(deploy_table(session, flt))[DEPLOY_COLUMNS],
                    pandas_deploy_table(session, flt),
                )


def test_a_checkpoint_rewritten_after_its_benchmarks_changed(stored, tmp_path):
    """Faster benchmarks, a closed alert and a superseded benchmark of one checkpoint: its entries are
    rewritten, the other checkpoints' kept."""
    with transaction(stored) as session:
        checkpoint = session.scalar(select(Checkpoint).where(Checkpoint.name == "epoch_2").limit(1))
        mine = select(Benchmark).where(Benchmark.checkpoint_id == checkpoint.id)
        others = session.execute(
            select(LeaderboardEntry.__table__).where(LeaderboardEntry.checkpoint_id != checkpoint.id)
        ).all()
        benches = list(session.scalars(mine.order_by(Benchmark.id)))
        for bench in benches[::2]:
            bench.decode_tps *= 3
        benches[1].superseded_by_id = benches[1].id
        for alert in session.scalars(select(Alert).where(Alert.benchmark_id.in_([b.id for b in benches]))):
            alert.status = "resolved"
        session.flush()
        leaderboard_entries.update(session, [checkpoint.id])
        for flt in filters(stored):
            same_as_computed(session, flt)
        kept = session.execute(
            select(LeaderboardEntry.__table__).where(LeaderboardEntry.checkpoint_id != checkpoint.id)
        ).all()
        assert sorted(kept) == sorted(others)
        session.rollback()


def published(model: str, benchmark: str, batch: int) -> float:
    """The published no-speculation output tok/s of a model on a benchmark at a batch size."""
    (tps,) = [
        r["output_throughput"]
        for r in specbundle_rows()
        if r["model"] == model and r["benchmark"] == benchmark and r["batch_size"] == batch and r["baseline"]
    ]
    return tps


def test_an_ingest_and_its_undo_keep_the_stored_ranking(real_url):
    """A benchmark at a setting SpecBundle never ran, three times the published baseline: its drafter
    goes to the top of gsm8k on Llama-3.1-8B with speedup 3.0, by a refresh of its checkpoint only; undone,
    the ranking is what it was."""
    engine = make_engine(real_url)
    flt = LeaderboardFilter(dataset="gsm8k")
    with reading(engine) as session:
        deployment = session.scalar(select(Deployment.id).where(Deployment.name == f"SpecBundle: {LLAMA8B}"))
        flt = replace(flt, deployment_id=deployment, concurrency=1)
        before = board_frame(leaderboard(session, flt))
        last = before["run"].iloc[-1]
    baseline = published(LLAMA8B, "gsm8k", 1)
    record = {
        "kind": "benchmark",
        "run": last,
        "checkpoint": "published",
        "deployment": f"SpecBundle: {LLAMA8B}",
        "speculative_algorithm": "EAGLE3",
        "num_steps": 9,
        "topk": 1,
        "num_draft_tokens": 10,
        "concurrency": 1,
        "dataset": "gsm8k",
        "decode_tps": 3 * baseline,
    }
    result = ingest(engine, UploadSource("faster.jsonl", native(record)))
    assert result.ok, result.problems
    with reading(engine) as session:
        after = board_frame(leaderboard(session, flt))
        assert after["run"].iloc[0] == last and after["measured_speedup"].iloc[0] == pytest.approx(3.0)
        assert (after["num_steps"].iloc[0], after["num_draft_tokens"].iloc[0]) == (9, 10)
        for view in [flt, LeaderboardFilter(), LeaderboardFilter(dataset="gsm8k", rank_by="predicted")]:
            same_as_computed(session, view)
        file_id = session.scalar(select(IngestedFile.id).where(IngestedFile.path.like("%faster.jsonl")))
    with transaction(engine) as session:
        delete_ingested_file(session, file_id)
    with reading(engine) as session:
        assert_same(board_frame(leaderboard(session, flt)), before)
        same_as_computed(session, LeaderboardFilter())


def test_a_new_baseline_rewrites_every_entry_it_divides(real_url):
    """A second no-speculation run of gsm8k at batch 1, twice the first: the measured baseline is their
    median (1.5x), so every entry there loses a third of its speedup."""
    engine = make_engine(real_url)
    with reading(engine) as session:
        deployment = session.scalar(select(Deployment.id).where(Deployment.name == f"SpecBundle: {LLAMA8B}"))
        flt = LeaderboardFilter(deployment_id=deployment, concurrency=1, dataset="gsm8k")
        before = board_frame(leaderboard(session, flt))
    baseline = published(LLAMA8B, "gsm8k", 1)
    record = {
        "kind": "benchmark",
        "deployment": f"SpecBundle: {LLAMA8B}",
        "concurrency": 1,
        "dataset": "gsm8k",
        "decode_tps": 2 * baseline,
    }
    assert ingest(engine, UploadSource("baseline.jsonl", native(record))).ok
    with reading(engine) as session:
        after = board_frame(leaderboard(session, flt))
        assert after["run"].tolist() == before["run"].tolist()
        assert after["measured_speedup"].to_numpy() == pytest.approx(before["measured_speedup"] / 1.5)
        same_as_computed(session, flt)
        same_as_computed(session, LeaderboardFilter())


def test_a_deleted_run_leaves_no_entry(real_url):
    engine = make_engine(real_url)
    with transaction(engine) as session:
        run = session.scalar(
            select(Run).where(Run.name == board_frame(leaderboard(session, LeaderboardFilter()))["run"][0])
        )
        delete_runs(session, [run.id])
    with reading(engine) as session:
        checkpoints = select(Checkpoint.id)
        assert not session.scalar(
            select(func.count()).where(LeaderboardEntry.checkpoint_id.not_in(checkpoints))
        )
        same_as_computed(session, LeaderboardFilter())


# On SQLite an entry written again gets a new rowid: the checkpoints whose entries a write ranked again.
WITH_ROWIDS = text("SELECT rowid, * FROM leaderboard_entry ORDER BY rowid")
RANKED_SINCE = text("SELECT DISTINCT checkpoint_id FROM leaderboard_entry WHERE rowid > :last")


def test_a_full_refresh_ranks_again_only_the_checkpoints_it_rewrote(real_url):
    """Nothing changed: a refresh of every benchmark ranks nothing again. A deployment's round overhead
    one millisecond longer: every prediction there changes, and exactly the checkpoints benchmarked there
    are ranked again, to what the ranking computes."""
    engine = make_engine(real_url)
    with transaction(engine) as session:
        before = session.execute(WITH_ROWIDS).all()
        refresh(session)
        assert session.execute(WITH_ROWIDS).all() == before
        last = before[-1][0]
        deployment = session.scalar(select(Deployment.id).where(Deployment.name == f"SpecBundle: {LLAMA8B}"))
        pset = session.scalar(
            select(ParameterSet).where(ParameterSet.deployment_id == deployment, ParameterSet.is_active)
        )
        pset.round_overhead_ms = (pset.round_overhead_ms or 0.0) + 1.0
        session.flush()
        there = set(
            session.scalars(
                select(Benchmark.checkpoint_id).where(
                    Benchmark.deployment_id == deployment, Benchmark.speculative_algorithm.is_not(None)
                )
            )
        )
        summary = refresh(session)
        assert summary.predictions > 0 and len(there) > 1
        assert set(session.scalars(RANKED_SINCE, {"last": last})) == there
    with reading(engine) as session:
        same_as_computed(session, LeaderboardFilter())
        same_as_computed(session, LeaderboardFilter(deployment_id=deployment, concurrency=1))


def test_a_superseded_benchmark_competes_no_more(real_url):
    """A valid rerun supersedes a benchmark of an entry's best setting: the entry is ranked again without
    it, as the ranking computes it."""
    engine = make_engine(real_url)
    entry = LeaderboardEntry.__table__.c
    place = (Benchmark.checkpoint_id, Benchmark.deployment_id, Benchmark.concurrency)
    with reading(engine) as session:
        # an entry (theory, ranked by measured speedup, across datasets) whose checkpoint has two benchmarks
        # or more at its place
        several = (
            select(*place)
            .where(Benchmark.speculative_algorithm.is_not(None))
            .group_by(*place)
            .having(func.count() > 1)
            .subquery()
        )
        at = [entry.checkpoint_id, entry.deployment_id, entry.concurrency]
        best = session.execute(
            select(*at, *(entry[name] for name in SETTING))
            .join(several, and_(*(several.c[c.name] == c for c in at)))
            .where(entry.source == "theory", entry.rank_by == "measured", entry.across.is_(True))
            .order_by(*at)
            .limit(1)
        ).one()
        mine = [c == v for c, v in zip(place, best[:3], strict=True)]
        old = session.scalar(
            select(func.min(Benchmark.id)).where(
                *mine, *(Benchmark.__table__.c[name] == best[3 + i] for i, name in enumerate(SETTING))
            )
        )
        new = session.scalar(select(func.max(Benchmark.id)).where(*mine, Benchmark.id != old))
        flt = LeaderboardFilter(deployment_id=best[1], concurrency=best[2])
        before = board_frame(leaderboard(session, flt))
    with transaction(engine) as session:
        supersede(session, old, new, "ana", "launched without the drafter")
    with reading(engine) as session:
        after = board_frame(leaderboard(session, flt))
        changed = ["benchmarks", "datasets", "measured_speedup", "num_steps", "num_draft_tokens"]
        assert not after[changed].equals(before[changed])
        same_as_computed(session, flt)
        same_as_computed(session, LeaderboardFilter())
