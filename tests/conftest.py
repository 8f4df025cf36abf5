"""Shared fixtures: temporary SQLite databases, empty or loaded with the demo data set."""

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

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


# The demo together with the real SpecBundle results, for the dashboard's tests (built once a session).
from tests.app_support import _real_template, real_url  # noqa: E402, F401
