"""The same store on a real PostgreSQL server: migrations, the demo story, atomic ingest, the bulk paths.

Runs when SPECDASH_TEST_PG_URL names a server (`.ci/run` starts one); each test gets a database of its own."""

import json
import os
import uuid

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from sqlalchemy import create_engine, func, make_url, select, text

from specdash.cli.main import cli
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, MetricPoint
from specdash.db.schema import downgrade, store_metadata, upgrade
from specdash.ingest.load import ingest_path
from tests.conftest import FIXTURES, REAL_FIXTURES

ADMIN_URL = os.environ.get("SPECDASH_TEST_PG_URL")
pytestmark = pytest.mark.skipif(not ADMIN_URL, reason="SPECDASH_TEST_PG_URL not set (.ci/run sets it)")


@pytest.fixture
def pg_url():
    name = f"specdash_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    yield url
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture
def pg_engine(pg_url):
    engine = make_engine(pg_url)
    upgrade(engine)
    yield engine
    engine.dispose()


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


def test_bad_file_writes_nothing_on_postgres(pg_engine):
    result = ingest_path(pg_engine, FIXTURES / "native" / "bad_doc.json")
    assert result.status == "failed" and len(result.problems) == 5
    with reading(pg_engine) as session:
        assert session.scalar(select(func.count()).select_from(Benchmark)) == 0


def test_training_log_bulk_insert_on_postgres(pg_engine):
    result = ingest_path(pg_engine, FIXTURES / "specforge" / "train_console.log")
    assert result.status == "loaded", result.problems
    with reading(pg_engine) as session:
        stored = session.scalar(select(func.count()).select_from(MetricPoint))
    assert stored == result.store.metric_points > 0
    assert ingest_path(pg_engine, FIXTURES / "specforge" / "train_console.log").status == "skipped"


def test_specbundle_and_refresh_on_postgres(pg_engine):
    result = ingest_path(pg_engine, REAL_FIXTURES / "specbundle-data.json")
    assert result.status == "loaded", result.problems[:3]
    assert result.store.created["benchmark"] == 500
    assert result.refresh.gaps > 0


def test_text_and_integers_at_the_bounds_load_the_same_as_on_sqlite(pg_engine, tmp_path):
    """What SQLite would store and PostgreSQL refuse (201-character names, NUL, steps past INTEGER) is
    refused by the records on both; what fits the columns loads on both."""
    from tests.test_ingest_bounds import native

    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(
        native(
            {"kind": "run", "name": "r" * 201},
            {"kind": "checkpoint", "run": "r", "name": "c", "step": 2**31},
            {"kind": "run", "name": "a\x00"},
        )
    )
    result = ingest_path(pg_engine, bad)
    assert [str(p) for p in result.problems] == [
        f"{bad}:1: name: String should have at most 200 characters",
        f"{bad}:2: step: Input should be less than or equal to 2147483647",
        f"{bad}:3: name: must not contain NUL characters",
    ]
    good = tmp_path / "good.jsonl"
    good.write_bytes(
        native(
            {"kind": "run", "name": "r" * 200},
            {"kind": "checkpoint", "run": "r" * 200, "name": "c", "step": 2**31 - 1, "path": "/" + "p" * 999},
        )
    )
    assert ingest_path(pg_engine, good).status == "loaded"
