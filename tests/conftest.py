"""Shared fixtures: temporary SQLite databases, empty or loaded with the demo data set, and PostgreSQL
databases on the server SPECDASH_TEST_PG_URL names (`.ci/run` starts one).

Every test database is a copy of a template built once per test process (empty at the head, the demo, the
demo with the real SpecBundle results, that store calibrated; on PostgreSQL a migrated template database):
the migrations run once a session, not once a test, except in the tests that exist to test them."""

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, make_url, text

from specdash.cli.main import cli
from specdash.db.engine import make_engine
from specdash.db.schema import upgrade
from specdash.demo import DEMO_FILE_NAME, demo_bytes
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL_FIXTURES = FIXTURES / "real"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The browser tests first, then the other slow ones (PostgreSQL's among them), then the rest, each in
    its order (a stable sort): on two workers, a long test started last runs alone at the end. `make test`
    keeps this order when it hands out the test files (--dist loadfile --no-loadscope-reorder)."""
    items.sort(key=start_order)


def start_order(item: pytest.Item) -> int:
    if item.get_closest_marker("browser"):
        return 0
    return 1 if item.get_closest_marker("slow") or item.get_closest_marker("postgres") else 2


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def fold_wal(engine) -> None:
    """Fold the write-ahead log into the database file, so that a plain copy of the file is complete, and
    close the engine."""
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()


def built_template(folder: Path, name: str, source: Path | None, fill) -> Path:
    """A template database `folder/name`: a copy of the template `source` (a new database at the head of
    the migrations without one) that `fill(engine)` adds to, its log folded in."""
    path = folder / name
    if source is not None:
        shutil.copy(source, path)
    engine = make_engine(sqlite_url(path))
    if source is None:
        upgrade(engine)
    fill(engine)
    fold_wal(engine)
    return path


def copy_of(template: Path, folder: Path) -> str:
    """The URL of a fresh copy of `template` in `folder`."""
    path = folder / template.name
    shutil.copy(template, path)
    return sqlite_url(path)


@pytest.fixture(scope="session")
def empty_template(tmp_path_factory) -> Path:
    """A database file at the head of the migrations, built once a session."""
    return built_template(tmp_path_factory.mktemp("empty"), "specdash.db", None, lambda engine: None)


@pytest.fixture
def db_url(tmp_path, empty_template) -> str:
    """An initialised, empty database: a copy of the session's template."""
    return copy_of(empty_template, tmp_path)


@pytest.fixture
def engine(db_url):
    eng = make_engine(db_url)
    yield eng
    eng.dispose()


def load_demo(engine) -> None:
    result = ingest(engine, UploadSource(DEMO_FILE_NAME, demo_bytes()))
    assert result.ok, result.problems


@pytest.fixture(scope="session")
def _demo_template(tmp_path_factory, empty_template) -> Path:
    return built_template(tmp_path_factory.mktemp("demo"), "demo.db", empty_template, load_demo)


@pytest.fixture
def demo_url(tmp_path, _demo_template) -> str:
    """A fresh copy of a database holding the demo data set."""
    return copy_of(_demo_template, tmp_path)


@pytest.fixture
def invoke():
    """Run the CLI in-process: invoke(url, "gaps", "--format", "json") -> click Result."""
    runner = CliRunner()

    def run(url: str | None, *args: str, input: str | None = None):
        prefix = ["--db", url] if url else []
        return runner.invoke(cli, [*prefix, *args], input=input, catch_exceptions=False)

    return run


ADMIN_URL = os.environ.get("SPECDASH_TEST_PG_URL")
# `pytestmark = needs_postgres` marks a module `postgres` and skips it without a server; each test gets a
# database of its own.
needs_postgres = [
    pytest.mark.postgres,
    pytest.mark.skipif(not ADMIN_URL, reason="SPECDASH_TEST_PG_URL not set (.ci/run sets it)"),
]


@contextlib.contextmanager
def pg_database(template: str | None = None) -> Iterator[str]:
    """The URL of a new PostgreSQL database (a copy of `template` when given), dropped afterwards."""
    name = f"specdash_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT")
    copy = f' TEMPLATE "{template}"' if template else ""
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    try:
        yield make_url(ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pg_url():
    with pg_database() as url:
        yield url


@pytest.fixture(scope="session")
def pg_template():
    """A PostgreSQL database at the head of the migrations, built once a session, to copy from."""
    with pg_database() as url:
        engine = make_engine(url)
        upgrade(engine)
        engine.dispose()
        yield make_url(url).database


@pytest.fixture
def pg_engine(pg_template):
    with pg_database(pg_template) as url:
        engine = make_engine(url)
        yield engine
        engine.dispose()


# The demo together with the real SpecBundle results, as ingested and calibrated, for the dashboard's tests
# (each built once a session).
from tests.app_support import _calibrated_template, _real_template, calibrated_url, real_url  # noqa: E402, F401
