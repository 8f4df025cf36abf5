"""Shared fixtures: temporary SQLite databases, empty or loaded with the demo data set, and PostgreSQL
databases on the server SPECDASH_TEST_PG_URL names (`.ci/run` starts one)."""

import os
import shutil
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, make_url, text

from specdash.cli.main import cli
from specdash.db.engine import make_engine
from specdash.db.schema import upgrade
from specdash.demo import DEMO_FILE_NAME, demo_bytes
from specdash.ingest.load import ingest_bytes

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL_FIXTURES = FIXTURES / "real"


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


@pytest.fixture
def db_url(tmp_path) -> str:
    """An initialised, empty database."""
    url = sqlite_url(tmp_path / "specdash.db")
    upgrade(make_engine(url))
    return url


@pytest.fixture
def engine(db_url):
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    eng = make_engine(sqlite_url(path))
    upgrade(eng)
    result = ingest_bytes(eng, DEMO_FILE_NAME, demo_bytes())
    assert result.ok, result.problems
    with eng.connect() as connection:  # fold the WAL into the file so a plain copy is complete
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    eng.dispose()
    return path


@pytest.fixture
def demo_url(tmp_path, _demo_template) -> str:
    """A fresh copy of a database holding the demo data set."""
    path = tmp_path / "demo.db"
    shutil.copy(_demo_template, path)
    return sqlite_url(path)


@pytest.fixture
def invoke():
    """Run the CLI in-process: invoke(url, "gaps", "--format", "json") -> click Result."""
    runner = CliRunner()

    def run(url: str | None, *args: str, input: str | None = None):
        prefix = ["--db", url] if url else []
        return runner.invoke(cli, [*prefix, *args], input=input, catch_exceptions=False)

    return run


ADMIN_URL = os.environ.get("SPECDASH_TEST_PG_URL")
# `pytestmark = needs_postgres` skips a module without a server; each test gets a database of its own.
needs_postgres = pytest.mark.skipif(not ADMIN_URL, reason="SPECDASH_TEST_PG_URL not set (.ci/run sets it)")


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


# The demo together with the real SpecBundle results, for the dashboard's tests (built once a session).
from tests.app_support import _real_template, real_url  # noqa: E402, F401
