"""Every `specdash` command on a temporary database: exit codes, printed text, rows."""

import json
import subprocess
import sys

import pytest
from sqlalchemy import func, select

from specdash.cli.main import COMMANDS as LAZY_COMMANDS
from specdash.cli.main import YOUNG_COLLECTION_OBJECTS, cli
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, Checkpoint, Gap, Prediction, Run
from specdash.db.schema import downgrade, revision_history

COMMANDS = sorted(LAZY_COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(invoke, command):
    result = invoke(None, command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.output


def test_a_command_freezes_what_its_imports_built():
    """The modules a command imports live as long as its process: the collector's full walks (during a
    million-point ingest, and at exit) leave them out, and its young collections come less often."""
    code = (
        "import gc; from specdash.cli.main import cli; assert not gc.get_freeze_count(); "
        "cli.get_command(None, 'ingest'); print(gc.get_freeze_count() > 0, gc.get_threshold()[0])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", str(YOUNG_COLLECTION_OBJECTS)]


def test_the_command_line_loads_a_command_with_the_collector_paused():
    """`specdash` (the entry point and `python -m specdash`) loads its modules without the collector
    walking them, and the command runs with it on again."""
    code = (
        "import gc, sys\n"
        "from specdash.cli import command_line\n"
        "from specdash.cli import main\n"
        "seen = []\n"
        "original = main.LazyGroup.get_command\n"
        "def get_command(self, ctx, name):\n"
        "    seen.append(gc.isenabled())\n"
        "    command = original(self, ctx, name)\n"
        "    seen.append(gc.isenabled())\n"
        "    return command\n"
        "main.LazyGroup.get_command = get_command\n"
        "sys.argv = ['specdash', 'formats']\n"
        "try:\n"
        "    command_line()\n"
        "except SystemExit:\n"
        "    print(seen[:2], gc.isenabled(), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stderr.split() == ["[False,", "True]", "True"]
    assert "specforge-log" in done.stdout


def test_version(invoke):
    result = invoke(None, "--version")
    assert result.exit_code == 0 and "specdash, version" in result.output


def test_init_creates_then_reports_current(invoke, tmp_path):
    url = f"sqlite:///{tmp_path / 'new.db'}"
    head = revision_history()[-1]
    first = invoke(url, "init")
    assert first.exit_code == 0 and f"created at schema revision {head}" in first.output
    second = invoke(url, "init")
    assert f"already at revision {head}" in second.output


def test_db_option_after_the_command(invoke, tmp_path):
    url = f"sqlite:///{tmp_path / 'late.db'}"
    assert invoke(None, "init", "--db", url).exit_code == 0
    assert (tmp_path / "late.db").exists()


def test_db_url_from_environment(tmp_path, monkeypatch):
    from click.testing import CliRunner

    monkeypatch.setenv("SPECDASH_DB_URL", f"sqlite:///{tmp_path / 'env.db'}")
    assert CliRunner().invoke(cli, ["init"]).exit_code == 0
    assert (tmp_path / "env.db").exists()


@pytest.mark.parametrize("command", ["demo", "predict", "gaps", "check", "ingest"])
def test_uninitialised_database_is_refused(invoke, tmp_path, command):
    url = f"sqlite:///{tmp_path / 'none.db'}"
    args = [command] + ([str(tmp_path / "x.json")] if command == "ingest" else [])
    if command == "ingest":
        (tmp_path / "x.json").write_text("{}")
    result = CliRunnerNoCatch().invoke(cli, ["--db", url, *args])
    assert result.exit_code == 1
    assert "is not initialised: run 'specdash init' to create it" in result.output


def test_out_of_date_schema_is_refused(invoke, db_url):
    downgrade(make_engine(db_url), revision_history()[0])  # a real database of the first revision
    result = CliRunnerNoCatch().invoke(cli, ["--db", db_url, "gaps"])
    assert result.exit_code == 1
    assert f"at schema revision {revision_history()[0]}" in result.output
    assert "run 'specdash init' to upgrade" in result.output


class CliRunnerNoCatch:
    def invoke(self, command, args):
        from click.testing import CliRunner

        return CliRunner().invoke(command, args)


def test_demo_twice_adds_nothing(invoke, db_url):
    first = invoke(db_url, "demo")
    assert first.exit_code == 0 and "created 15 benchmark(s)" in first.output
    with reading(make_engine(db_url)) as session:
        before = [
            session.scalar(select(func.count()).select_from(m)) for m in (Run, Checkpoint, Benchmark, Gap)
        ]
    second = invoke(db_url, "demo")
    assert second.exit_code == 0 and "skipped, already ingested" in second.output
    with reading(make_engine(db_url)) as session:
        after = [
            session.scalar(select(func.count()).select_from(m)) for m in (Run, Checkpoint, Benchmark, Gap)
        ]
    assert before == after == [3, 6, 15, after[3]] and after[3] > 0


def test_demo_if_empty_leaves_a_used_database_alone(invoke, demo_url):
    result = invoke(demo_url, "demo", "--if-empty")
    assert result.exit_code == 0 and "already has data; demo not loaded" in result.output


def test_predict_refreshes_every_benchmark(invoke, demo_url):
    with reading(make_engine(demo_url)) as session:
        session.execute(Prediction.__table__.delete().where(Prediction.source == "theory"))
        session.commit()
    result = invoke(demo_url, "predict")
    assert result.exit_code == 0
    assert "12 prediction(s) for 13 benchmark(s)" in result.output
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(func.count()).where(Prediction.source == "theory")) == 12


def test_gaps_table_lists_the_story_first(invoke, demo_url):
    result = invoke(demo_url, "gaps")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split()[:4] == ["id", "run", "checkpoint", "deployment"]
    assert "k25-eagle3-10k" in lines[1] and "+48.9%" in lines[1] and "algorithm_mismatch" in lines[1]


def test_gaps_csv_has_a_header_and_a_row_per_gap(invoke, demo_url):
    result = invoke(demo_url, "gaps", "--threshold", "0", "--status", "all", "--format", "csv")
    rows = result.output.splitlines()
    assert rows[0].startswith("benchmark_id,gap_id,run,checkpoint,deployment,source")
    assert len(rows) - 1 == len(
        json.loads(invoke(demo_url, "gaps", "--threshold", "0", "--status", "all", "--format", "json").output)
    )


def test_gaps_threshold_filters(invoke, demo_url):
    high = json.loads(invoke(demo_url, "gaps", "--threshold", "0.4", "--format", "json").output)
    assert [r["run"] for r in high] == ["k25-eagle3-10k"]
    everything = json.loads(
        invoke(demo_url, "gaps", "--threshold", "0", "--status", "all", "--format", "json").output
    )
    assert len(everything) > len(high)
    assert all(abs(r["gap"]) >= 0.4 for r in high)


def test_gaps_of_an_unknown_source_is_a_usage_error_naming_the_sources(invoke, demo_url):
    result = invoke(demo_url, "gaps", "--source", "calib")
    assert result.exit_code == 2
    assert (
        "Invalid value for '--source': no prediction source 'calib'; valid sources: theory, calibrated"
        in (result.output)
    )
    # a built-in source without predictions yet is no typo: it has no gaps
    assert invoke(demo_url, "gaps", "--source", "calibrated").output == "no gaps above the threshold\n"


def test_ls_lists_the_names_other_commands_take(invoke, demo_url):
    result = invoke(demo_url, "ls", "deployments")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[0].split() == ["name", "gpu", "tp_size", "interconnect", "engine", "target_model"]
    assert [line.split(",")[0] for line in lines[1:]] == ["8x H200", "8x RTX PRO 6000"]
    runs = json.loads(invoke(demo_url, "ls", "runs", "--format", "json").output)
    assert "k25-eagle3-10k" in [r["name"] for r in runs] and all(
        isinstance(r["checkpoints"], int) for r in runs
    )
    checkpoints = json.loads(
        invoke(demo_url, "ls", "checkpoints", "--run", "k25-eagle3-10k", "--format", "json").output
    )
    assert checkpoints and {c["run"] for c in checkpoints} == {"k25-eagle3-10k"}
    assert invoke(demo_url, "ls", "checkpoints", "--run", "nope").output == "no checkpoints in run 'nope'\n"
    assert invoke(demo_url, "ls", "nodes").exit_code == 2


def test_check_passes_on_a_database_without_alerts(invoke, db_url):
    result = invoke(db_url, "check")
    assert result.exit_code == 0 and "ok: no open alerts" in result.output


def test_formats_lists_the_native_format(invoke):
    result = invoke(None, "formats")
    assert result.exit_code == 0 and result.output.startswith("specdash")


def test_serve_refuses_uninitialised_database(tmp_path):
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["--db", f"sqlite:///{tmp_path / 'none.db'}", "serve"])
    assert result.exit_code == 1 and "specdash init" in result.output


def test_serve_does_not_print_the_database_password(monkeypatch):
    from types import SimpleNamespace

    from click.testing import CliRunner
    from sqlalchemy import make_url

    from specdash.cli import serve_command

    url = "postgresql://team:s3cret@db.example/specdash"
    launched = []
    monkeypatch.setattr(serve_command, "open_db", lambda ctx: SimpleNamespace(url=make_url(url)))
    monkeypatch.setattr(serve_command.os, "execve", lambda exe, command, env: launched.append(env))
    result = CliRunner().invoke(cli, ["--db", url, "serve"])
    assert "s3cret" not in result.output and "team:***@db.example" in result.output
    assert launched[0]["SPECDASH_DB_URL"] == url  # the dashboard itself still gets the full URL
