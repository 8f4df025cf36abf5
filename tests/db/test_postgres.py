"""The same store on a real PostgreSQL server: migrations, the demo story, atomic ingest, the bulk paths.

Runs when SPECDASH_TEST_PG_URL names a server (`.ci/run` starts one); each test gets a database of its own."""

import json

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import func, select

from specdash.app.board_frames import board_frame, choices_frame
from specdash.app.frames import frame as as_frame
from specdash.cli.main import cli
from specdash.db import curves, leaderboard_entries
from specdash.db.deploy import DEPLOY_COLUMNS, deploy_table
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.leaderboard import leaderboard
from specdash.db.models import Benchmark, MetricKey, MetricPoint, Run
from specdash.db.schema import downgrade, store_metadata, upgrade
from specdash.demo import DEMO_FILE_NAME, demo_bytes
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import PathSource
from tests.conftest import FIXTURES, REAL_FIXTURES, needs_postgres
from tests.db.leaderboard_reference import pandas_deploy_table, pandas_leaderboard
from tests.db.summary_support import ingested, walk
from tests.db.test_leaderboard_ranking import assert_same, build_store, filters
from tests.db.test_rollups import assert_rollups_match_points, offer, specforge_log
from tests.migrations.test_0018_overview_summaries import (
    at_0017_with_a_superseded_benchmark,
    upgraded_to_0018,
)

pytestmark = needs_postgres


def test_migrations_match_the_models_and_go_both_ways(pg_url):
    engine = make_engine(pg_url)
    upgrade(engine)
    with engine.connect() as connection:
        assert compare_metadata(MigrationContext.configure(connection), store_metadata()) == []
    downgrade(engine, "base")
    upgrade(engine)
    engine.dispose()


def test_demo_story_on_postgres(pg_url):
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", pg_url, "init"]).exit_code == 0
    assert runner.invoke(cli, ["--db", pg_url, "demo"]).exit_code == 0
    gaps = json.loads(runner.invoke(cli, ["--db", pg_url, "gaps", "--format", "json"]).output)
    story = next(g for g in gaps if g["run"] == "k25-eagle3-10k")
    assert story["predicted_tps"] == pytest.approx(161.0, abs=0.5)
    assert story["gap"] == pytest.approx(0.489, abs=0.005)
    assert story["diagnoses"][0]["code"] == "algorithm_mismatch"
    assert runner.invoke(cli, ["--db", pg_url, "check"]).exit_code == 1


def test_statements_are_planned_as_the_tables_are_and_foreign_key_checks_keep_their_plans(pg_engine):
    """Nothing specdash sends is prepared (a generic plan made while a table was empty would be reused as it
    grows); the server's own plans, those of its foreign-key checks, are cached as by default."""
    with pg_engine.connect() as connection:
        raw = connection.connection.driver_connection
        assert raw is not None and raw.prepare_threshold is None
        assert connection.exec_driver_sql("SHOW plan_cache_mode").scalar() == "auto"


def test_bad_file_writes_nothing_on_postgres(pg_engine):
    result = ingest(pg_engine, PathSource(FIXTURES / "native" / "bad_doc.json"))
    assert result.status == "failed" and len(result.problems) == 5
    with reading(pg_engine) as session:
        assert session.scalar(select(func.count()).select_from(Benchmark)) == 0


def test_training_log_bulk_insert_on_postgres(pg_engine):
    result = ingest(pg_engine, PathSource(FIXTURES / "specforge" / "train_console.log"))
    assert result.status == "loaded", result.problems
    with reading(pg_engine) as session:
        stored = session.scalar(select(func.count()).select_from(MetricPoint))
    assert stored == result.store.metric_points > 0
    assert ingest(pg_engine, PathSource(FIXTURES / "specforge" / "train_console.log")).status == "skipped"


def test_specbundle_and_refresh_on_postgres(pg_engine):
    result = ingest(pg_engine, PathSource(REAL_FIXTURES / "specbundle-data.json"))
    assert result.status == "loaded", result.problems[:3]
    assert result.store.created["benchmark"] == 500
    assert result.refresh.gaps > 0


# when each row was written: the only columns that differ
WRITTEN_AT = {"created_at", "updated_at"}
COMPARED = ["benchmark", "prediction", "gap", "alert", "leaderboard_entry"]


def stored_tables(engine) -> dict[str, list[tuple]]:
    """Every row of the tables an ingest writes, in primary-key order, without when they were written."""
    tables = {}
    with reading(engine) as session:
        for name in COMPARED:
            table = store_metadata().tables[name]
            columns = [c for c in table.columns if c.name not in WRITTEN_AT]
            query = select(*columns).order_by(*table.primary_key.columns)
            tables[name] = [tuple(row) for row in session.execute(query)]
    return tables


def specbundle_on_both(pg_engine, tmp_path):
    """The real SpecBundle file ingested into PostgreSQL and into a new SQLite store, which is returned."""
    sqlite = make_engine(f"sqlite:///{tmp_path / 'same.db'}")
    upgrade(sqlite)
    for engine in (sqlite, pg_engine):
        result = ingest(engine, PathSource(REAL_FIXTURES / "specbundle-data.json"))
        assert result.status == "loaded", result.problems[:3]
    return sqlite


def test_a_file_is_stored_row_for_row_as_on_sqlite(pg_engine, tmp_path):
    """Ids drawn from PostgreSQL's sequences and COPY store what SQLite's inserts store: the same ids,
    benchmarks, predictions, gaps, verdicts and Leaderboard entries."""
    sqlite = specbundle_on_both(pg_engine, tmp_path)
    on_sqlite, on_postgres = stored_tables(sqlite), stored_tables(pg_engine)
    sqlite.dispose()
    for name in COMPARED:
        assert len(on_postgres[name]) == len(on_sqlite[name]) > 0, name
        if name != "leaderboard_entry":
            assert on_postgres[name] == on_sqlite[name], name
    # the entries' means are each engine's AVG, summed in its own order: equal to the last bits
    for pg_row, sqlite_row in zip(
        on_postgres["leaderboard_entry"], on_sqlite["leaderboard_entry"], strict=True
    ):
        assert [pytest.approx(v, rel=1e-12) if isinstance(v, float) else v for v in sqlite_row] == list(
            pg_row
        )


def test_text_and_integers_at_the_bounds_load_the_same_as_on_sqlite(pg_engine, tmp_path):
    """What SQLite would store and PostgreSQL refuse (201-character names, NUL, steps past INTEGER) is
    refused by the records on both; what fits the columns loads on both."""
    from tests.ingest_support import native

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        native(
            {"kind": "run", "name": "r" * 201},
            {"kind": "checkpoint", "run": "r", "name": "c", "step": 2**31},
            {"kind": "run", "name": "a\x00"},
        )
    )
    result = ingest(pg_engine, PathSource(bad))
    assert [str(p) for p in result.problems] == [
        f"{bad}:1: name: String should have at most 200 characters",
        f"{bad}:2: step: Input should be less than or equal to 2147483647 (got 2147483648)",
        f"{bad}:3: name: must not contain NUL characters",
    ]
    good = tmp_path / "good.jsonl"
    good.write_bytes(
        native(
            {"kind": "run", "name": "r" * 200},
            {"kind": "checkpoint", "run": "r" * 200, "name": "c", "step": 2**31 - 1, "path": "/" + "p" * 999},
        )
    )
    assert ingest(pg_engine, PathSource(good)).status == "loaded"


def test_training_metric_rollups_on_postgres(pg_engine, tmp_path):
    """The rollups' upsert (least/greatest), their recomputation after a resumed log and the curves read
    from them, on PostgreSQL: equal to the sums of the points stored."""
    path = tmp_path / "dense-run.log"
    specforge_log(path, range(25_600))
    assert ingest(pg_engine, PathSource(path)).status == "loaded"
    with transaction(pg_engine) as session:
        run_id = session.scalar(select(Run.id))
        # a resumed log: 5,600 of its steps stored already
        writer = offer(session, run_id, range(20_000, 30_000), lambda s: 2.0, key="train/loss")
        assert (writer.offered, writer.written) == (10_000, 4_400)
    with reading(pg_engine) as session:
        keys = dict(session.execute(select(MetricKey.name, MetricKey.id)).all())
        assert_rollups_match_points(session, {(run_id, k): (64, 4096) for k in keys.values()})
        frame = as_frame(
            curves.training_curves(session, [run_id], ["train/loss"], max_points=100), curves.CurvePoint
        )
    # steps 0-29,999, 300 a bucket: the first holds the 64-step rollup buckets starting at 0-256 (steps
    # 0-319), values 0-99 three times (14,850) and 0-19 (190); the last those starting at 29,760-29,952
    # (steps 29,760-29,999), all 2.0
    assert set(frame["bucket_steps"]) == {300} and len(frame) == 100
    first, last = frame.iloc[0], frame.iloc[-1]
    assert (first["step"], first["value"], first["min"], first["max"]) == (159.5, 47.0, 0.0, 99.0)
    assert (last["step"], last["value"], last["min"], last["max"]) == (29_879.5, 2.0, 2.0, 2.0)


def test_the_leaderboard_computed_and_stored_on_postgres(pg_engine):
    """The varied store of tests/db/test_leaderboard_ranking.py: the ranking computed from the benchmarks, then
    read from the stored entries, is the pandas ranking under every filter; so is the deploy answer."""
    build_store(pg_engine)
    for stored in (False, True):
        if stored:
            with transaction(pg_engine) as session:
                leaderboard_entries.update(session, None)
        with reading(pg_engine) as session:
            assert leaderboard_entries.holds(session, "theory") is stored
            for flt in filters(pg_engine):
                assert_same(board_frame(leaderboard(session, flt)), pandas_leaderboard(session, flt))
                if flt.rank_by == "measured":
                    assert_same(
                        choices_frame(deploy_table(session, flt))[DEPLOY_COLUMNS],
                        pandas_deploy_table(session, flt),
                    )


def test_every_write_keeps_the_summary_rows_on_postgres(pg_engine):
    walk(pg_engine)


def test_the_upgrade_to_0018_fills_the_summaries_on_postgres(pg_engine):
    ingested(pg_engine, DEMO_FILE_NAME, demo_bytes())
    at_0017_with_a_superseded_benchmark(pg_engine)
    upgraded_to_0018(pg_engine)


def overview_reads(engine) -> dict:
    """What the Overview and one run's Checkpoints page read (their statements are built once, values
    bound at each run), the parity plot both whole and thinned."""
    from specdash.db import alerts, checkpoints, parity, queries

    with reading(engine) as session:
        read: dict = {
            "counts": queries.counts(session),
            "open alerts": queries.open_alert_counts(session),
            "sources": queries.prediction_sources(session),
            "latest": queries.latest_checkpoints(session, 3),
            "every run's latest": queries.latest_checkpoints(session),
        }
        for source in read["sources"]:
            read[f"parity {source}"] = parity.parity_points(session, source, 10_000)
            read[f"thinned parity {source}"] = parity.parity_points(session, source, 40)
        for offset in (0, 5):
            read[f"alerts from {offset}"] = alerts.alert_page(session, alerts.AlertFilters(), offset, 5)
        run_ids = [run.id for run in session.execute(select(Run.id).order_by(Run.id))]
        ids = [c.id for c in checkpoints.checkpoint_summaries(session, run_ids[:1])]
        deployment = checkpoints.benchmarked_deployments(session, ids)[0].id
        setting = checkpoints.speculation_settings(session, ids, deployment)[0]
        read["comparison"] = checkpoints.checkpoint_comparison(session, ids, deployment, setting)
        read["acceptance"] = checkpoints.position_acceptance(session, ids)
    return read


def same_read(on_sqlite, on_postgres) -> bool:
    """Equal, floats to the last bits (each engine sums in its own order), rows of a list in any order."""
    if isinstance(on_sqlite, float) and on_postgres is not None:
        return on_postgres == pytest.approx(on_sqlite, rel=1e-9)
    if isinstance(on_sqlite, dict):
        return on_sqlite.keys() == on_postgres.keys() and all(
            same_read(on_sqlite[k], on_postgres[k]) for k in on_sqlite
        )
    if isinstance(on_sqlite, list):
        return len(on_sqlite) == len(on_postgres) and all(
            same_read(a, b)
            for a, b in zip(sorted(on_sqlite, key=repr), sorted(on_postgres, key=repr), strict=True)
        )
    if isinstance(on_sqlite, tuple):
        return len(on_sqlite) == len(on_postgres) and all(map(same_read, on_sqlite, on_postgres))
    if hasattr(on_sqlite, "__dataclass_fields__"):
        return same_read(vars(on_sqlite), vars(on_postgres))
    return on_sqlite == on_postgres


def test_the_overview_and_checkpoints_reads_answer_as_on_sqlite(pg_engine, tmp_path):
    sqlite = specbundle_on_both(pg_engine, tmp_path)
    on_sqlite, on_postgres = overview_reads(sqlite), overview_reads(pg_engine)
    sqlite.dispose()
    assert on_sqlite["counts"]["benchmarks"] > 0 and len(on_sqlite["thinned parity theory"].rows) <= 40
    for name, read in on_sqlite.items():
        assert same_read(read, on_postgres[name]), name
