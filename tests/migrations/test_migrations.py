"""The Alembic scripts and the models agree, migrations go both ways, and data survives every upgrade."""

import sqlite3
import warnings
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from specdash.db.engine import make_engine
from specdash.db.schema import (
    SchemaOutOfDate,
    alembic_config,
    check_schema,
    current_revision,
    downgrade,
    head_revision,
    revision_history,
    store_metadata,
    upgrade,
)
from specdash.demo import DEMO_FILE_NAME, demo_bytes
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import PathSource, UploadSource
from tests.conftest import FIXTURES, REAL_FIXTURES, sqlite_url
from tests.migration_support import as_before_0007, fill_at, table_rows

pytestmark = pytest.mark.slow

PRERELEASE_0001 = FIXTURES / "migrations" / "prerelease-0001-schema.sql"


def test_exactly_one_head():
    assert len(ScriptDirectory.from_config(alembic_config()).get_heads()) == 1


def test_revision_history_is_alembics():
    # The schema check reads the scripts without importing Alembic; it must see what Alembic sees.
    walk = [script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()]
    assert revision_history() == tuple(reversed(walk))
    assert revision_history()[-1] == head_revision()


def test_upgrade_matches_models(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as connection, warnings.catch_warnings():
        # neither side of the comparison reads an index on an expression (ix_prediction_source_key):
        # it is compared apart below
        warnings.filterwarnings("ignore", ".*expression-based index", category=Warning)
        diff = compare_metadata(MigrationContext.configure(connection), store_metadata())
        stored = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master WHERE name = 'ix_prediction_source_key'"
        ).scalar()
    assert diff == []
    indexes = store_metadata().tables["prediction"].indexes
    model = next(ix for ix in indexes if ix.name == "ix_prediction_source_key")
    expression = str(model.expressions[0].compile(compile_kwargs={"literal_binds": True}))
    assert " ".join(stored.split()).endswith(f"ON prediction (({expression.replace('prediction.', '')}))")


def test_downgrade_to_base_and_back(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path / 'm.db'}")
    upgrade(engine)
    downgrade(engine, "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    upgrade(engine)
    assert "benchmark" in inspect(engine).get_table_names()


def test_sqlite_pragmas(engine):
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


# --- data survives (MLflow's snapshot-before/after check, at every past revision) ---


@pytest.fixture(scope="module")
def filled_head(tmp_path_factory) -> Path:
    """A database at the head revision holding the demo data set and the real SpecBundle file."""
    path = tmp_path_factory.mktemp("head") / "head.db"
    engine = make_engine(sqlite_url(path))
    upgrade(engine)
    assert ingest(engine, UploadSource(DEMO_FILE_NAME, demo_bytes())).ok
    assert ingest(engine, PathSource(REAL_FIXTURES / "specbundle-data.json")).ok
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


# Required columns a later revision moved elsewhere (gap.status became the benchmark's alert in 0008): what
# rows copied back to an older revision hold in them.
@pytest.mark.parametrize("revision", revision_history()[:-1])
def test_data_survives_upgrade_from(revision, filled_head, tmp_path):
    path = tmp_path / f"at-{revision}.db"
    written = fill_at(revision, filled_head, path)
    # demo + SpecBundle, not an empty shell
    assert len(written["benchmark"][1]) > 500 and len(written["metric_point"][1]) > 3000
    assert all(written[table][1] for table in ("deployment", "run", "checkpoint", "prediction"))
    engine = make_engine(sqlite_url(path))
    with pytest.raises(SchemaOutOfDate, match="run 'specdash init' to upgrade"):
        check_schema(engine)
    upgrade(engine)
    check_schema(engine)
    # rows written before 0007 held 0 for an unstated cost, which 0007 turns into NULL
    before_0007 = revision_history().index(revision) < revision_history().index("0007")

    def stored(table, columns):
        found = table_rows(path, table, columns)
        return as_before_0007(table, columns, found) if before_0007 else found

    for table, (columns, rows) in written.items():
        assert stored(table, columns) == rows, table

    # One step down and back up again keeps the rows too.
    downgrade(engine, "-1")
    upgrade(engine)
    for table, (columns, rows) in written.items():
        assert stored(table, columns) == rows, table
    engine.dispose()


def test_prerelease_0001_database_is_repaired(tmp_path, invoke):
    """A database an early build stamped 0001, missing columns the final 0001 has, upgrades and then works."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as con:
        con.executescript(PRERELEASE_0001.read_text())
        con.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
        con.execute("INSERT INTO alembic_version VALUES ('0001')")
        con.execute(
            "INSERT INTO deployment (id, name, comm_fraction, draft_step_ms, round_overhead_ms, "
            "verify_growth_compute, verify_growth_comm, is_demo, created_at) "
            "VALUES (1, '8x H100, TP8, NVLink', 0.1, 0.5, 0, 0, 0, 0, '2026-11-20 10:00:00')"
        )
        con.execute(
            "INSERT INTO parameter_set (id, deployment_id, version, source, baseline_tps, comm_fraction, "
            "draft_step_ms, round_overhead_ms, verify_growth_compute, verify_growth_comm, acc_to_acceptance, "
            "is_active, created_at) VALUES (1, 1, 1, 'theory', 120, 0.1, 0.5, 0, 0, 0, 1, 1, "
            "'2026-11-20 10:00:00')"
        )
    url = sqlite_url(path)
    refused = invoke(url, "gaps")
    assert refused.exit_code == 1
    assert "at schema revision 0001" in refused.output and "run 'specdash init' to upgrade" in refused.output

    result = invoke(url, "init")
    assert result.exit_code == 0, result.output
    assert f"upgraded from revision 0001 to {head_revision()}" in result.output
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT draft_branch_ms, baseline_tps FROM parameter_set").fetchall() == [
            (0.0, 120.0)
        ]
        columns = {row[1] for row in con.execute("PRAGMA table_info(benchmark)")}
    assert {"request_rate", "position_survival", "engine_version"} <= columns
    assert invoke(url, "gaps").exit_code == 0


def test_database_from_a_newer_specdash_is_refused(db_url, invoke):
    engine = make_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    for args in (("gaps",), ("init",)):
        result = invoke(db_url, *args)
        assert result.exit_code == 1
        assert "written by a newer specdash" in result.output and "upgrade specdash" in result.output
        assert "Traceback" not in result.output
    engine.dispose()
