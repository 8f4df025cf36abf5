"""Environment faults: a missing folder, a file that is not a database, a read-only or full store, a server
that does not answer, paths that never end. Each ends in one sentence saying what to fix, exit 1, no
traceback, and the store as it was."""

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from sqlalchemy import event

from specdash.cli import common
from specdash.cli.main import cli
from specdash.db.engine import make_engine
from tests.ingest_support import SGLANG, content

RUN = json.dumps({"kind": "run", "name": "r"}) + "\n"


def run_cli(*args: str, env: dict | None = None) -> CliRunner:
    result = CliRunner().invoke(cli, list(args), env=env)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return result


def test_a_missing_folder_says_which(tmp_path):
    url = f"sqlite:///{tmp_path / 'nowhere' / 'specdash.db'}"
    for command in (["init"], ["gaps"]):
        result = run_cli("--db", url, *command)
        assert result.exit_code == 1
        assert result.output == (
            f"Error: cannot open the database file {tmp_path / 'nowhere' / 'specdash.db'}: check that the folder "
            f"{tmp_path / 'nowhere'} exists and that specdash may write there\n"
        )


def test_a_file_that_is_not_a_database(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 200)
    result = run_cli("--db", f"sqlite:///{path}", "gaps")
    assert result.exit_code == 1
    assert result.output == (
        f"Error: {path} is not a SQLite database: pass --db with specdash's database file "
        "(or a new path, then 'specdash init')\n"
    )
    assert path.read_text() == "these are my notes, not a database\n" * 200


def test_a_read_only_store_is_left_as_it_was(db_url, tmp_path):
    path = db_url.removeprefix("sqlite:///")
    read_only = f"sqlite:///file:{path}?mode=ro&uri=true"
    before = content(make_engine(db_url))
    (tmp_path / "run.jsonl").write_text(RUN)
    result = run_cli("--db", read_only, "ingest", str(tmp_path / "run.jsonl"))
    assert result.exit_code == 1
    assert f"Error: the database {path} is read-only" in result.output
    assert content(make_engine(db_url)) == before


def test_a_full_disk_writes_nothing(db_url, tmp_path, monkeypatch):
    """SQLite's page cap stands in for a full disk: the same 'database or disk is full' error."""
    pages = make_engine(db_url).connect().exec_driver_sql("PRAGMA page_count").scalar()

    def capped(url, **options):
        engine = make_engine(url, **options)
        event.listen(engine, "connect", lambda dbapi, _: dbapi.execute(f"PRAGMA max_page_count={pages + 2}"))
        return engine

    monkeypatch.setattr(common, "make_engine", capped)
    before = content(make_engine(db_url))
    big = tmp_path / "many.jsonl"
    big.write_text(
        "".join(
            json.dumps({"kind": "run", "name": f"run-{i:05d}", "notes": "n" * 500}) + "\n"
            for i in range(2000)
        )
    )
    result = run_cli("--db", db_url, "ingest", "-q", str(big))
    assert result.exit_code == 1
    path = db_url.removeprefix("sqlite:///")
    assert (
        result.output
        == f"Error: the disk holding {path} is full: free some space and retry (nothing was written)\n"
    )
    assert content(make_engine(db_url)) == before


def test_an_unreachable_postgresql_server():
    result = run_cli("--db", "postgresql+psycopg://specdash:secret@127.0.0.1:1/specdash", "gaps")
    assert result.exit_code == 1
    assert result.output.startswith(
        "Error: cannot connect to PostgreSQL at postgresql+psycopg://specdash:***@127.0.0.1:1/specdash: "
    )
    assert "secret" not in result.output
    assert result.output.endswith("Start the server or fix --db / $SPECDASH_DB_URL\n")


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
@pytest.mark.slow
def test_paths_that_never_end_are_refused_without_opening(db_url, tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "results.jsonl"
        os.mkfifo(path)
        expected = f"{path}: is a FIFO, not a regular file: specdash reads files that end"
    elif kind == "device":
        path, expected = (
            "/dev/zero",
            "/dev/zero: is a device, not a regular file: specdash reads files that end",
        )
    else:
        # a folder is a path source (a tracker store, a SpecForge output folder): this one holds none
        path, expected = tmp_path, f"{tmp_path}: a folder holding no tracker store or SpecForge output"
    # a real process with a deadline: a hang fails the test instead of stalling the suite
    done = subprocess.run(
        [sys.executable, "-m", "specdash", "--db", db_url, "ingest", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert expected in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_removed_before_it_is_read(engine, tmp_path):
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.sources import PathSource

    result = ingest(engine, PathSource(tmp_path / "gone.jsonl"))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        f"{tmp_path / 'gone.jsonl'}: cannot read: No such file or directory"
    ]


def test_bom_and_crlf_read_as_plain_text(engine, tmp_path):
    """Every line-based and JSON format: a byte-order mark and CRLF line ends load the same records."""
    plain = (SGLANG / "bench_serving_0.5.9.jsonl").read_bytes()
    windows = b"\xef\xbb\xbf" + plain.replace(b"\n", b"\r\n")
    from specdash.ingest.pipeline import preview_ingest
    from specdash.ingest.sources import UploadSource

    a = preview_ingest(engine, UploadSource("plain.jsonl", plain))
    b = preview_ingest(engine, UploadSource("windows.jsonl", windows))
    assert not a.problems and not b.problems
    assert a.store.records == b.store.records > 0
