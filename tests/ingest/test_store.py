"""Conflicts are reported, never silently resolved; --update applies a file's newer values; --replace corrects a
file ingested with the wrong names; summaries count what was stored."""

import json

from click.testing import CliRunner
from sqlalchemy import func, select

from specdash.cli.main import cli
from specdash.db.changes import acting_as, login_name
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, Change, Deployment, IngestedFile, Run
from specdash.ingest.describe import describe
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnConflict
from specdash.ingest.sources import UploadSource
from tests.ingest_support import content


def jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


RUN = {"kind": "run", "name": "r", "framework": "specforge", "ttt_length": 5}


def test_a_run_stored_differently_is_a_conflict_naming_both_values(engine):
    assert ingest(engine, UploadSource("a.jsonl", jsonl(RUN))).ok
    before = content(engine)
    result = ingest(engine, UploadSource("b.jsonl", jsonl({**RUN, "ttt_length": 7})))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        "b.jsonl:1: ttt_length: run 'r' is stored with ttt_length 5, the file says 7; pass --update to apply the "
        "file's values"
    ]
    assert content(engine) == before


def test_the_same_record_twice_in_one_file_with_other_values_is_a_conflict(engine):
    result = ingest(engine, UploadSource("twice.jsonl", jsonl(RUN, {**RUN, "framework": "eagle"})))
    assert [str(p) for p in result.problems] == [
        "twice.jsonl:2: framework: run 'r' is stored with framework 'specforge', the file says 'eagle'; pass "
        "--update to apply the file's values"
    ]


def history(engine) -> list[tuple]:
    with reading(engine) as session:
        return [
            (c.who, c.action, c.kind, c.subject, c.field, c.old_value, c.new_value, c.note)
            for c in session.scalars(select(Change).order_by(Change.id))
        ]


def test_update_applies_the_newer_values_and_counts_them(engine):
    ingest(engine, UploadSource("a.jsonl", jsonl(RUN)))
    with acting_as("ana"):
        result = ingest(
            engine,
            UploadSource("b.jsonl", jsonl({**RUN, "ttt_length": 7})),
            IngestPolicy(on_conflict=OnConflict.UPDATE),
        )
    assert result.status == "loaded" and result.store.updated["run"] == 1 and result.store.replaced == 1
    assert "1 stored value(s) replaced by the file's (see 'specdash changes')" in describe(result)
    with reading(engine) as session:
        assert session.scalar(select(Run.ttt_length)) == 7
    # the value it replaced is kept in the history, with who applied it and from which file
    assert history(engine) == [("ana", "ingest --update", "run", "r", "ttt_length", 5, 7, "from b.jsonl")]


def test_filling_in_or_repeating_values_writes_no_history(engine):
    ingest(engine, UploadSource("a.jsonl", jsonl({"kind": "run", "name": "r"})))
    ingest(
        engine, UploadSource("b.jsonl", jsonl(RUN)), IngestPolicy(on_conflict=OnConflict.UPDATE)
    )  # fills framework and ttt_length: no one's values
    ingest(
        engine,
        UploadSource("c.jsonl", jsonl(RUN, {"kind": "run", "name": "other"})),
        IngestPolicy(on_conflict=OnConflict.UPDATE),
    )  # the same again
    assert history(engine) == []


def test_filling_what_the_store_does_not_know_is_no_conflict(engine):
    ingest(engine, UploadSource("a.jsonl", jsonl({"kind": "run", "name": "r"})))
    result = ingest(engine, UploadSource("b.jsonl", jsonl(RUN)))
    assert result.status == "loaded" and result.store.updated["run"] == 1 and result.store.replaced == 0
    assert "replaced" not in describe(result)


def test_an_external_prediction_with_other_numbers_is_a_conflict(engine):
    prediction = {
        "kind": "prediction",
        "source": "sim",
        "speculative_algorithm": "EAGLE3",
        "num_steps": 3,
        "run": "r",
        "checkpoint": "c",
        "deployment": "d",
        "predicted_tps": 150.0,
    }
    # what it predicts must exist (ingest/rules/names.py): the run, its checkpoint and the deployment
    named = [
        {"kind": "deployment", "name": "d"},
        {"kind": "run", "name": "r"},
        {"kind": "checkpoint", "run": "r", "name": "c"},
    ]
    assert ingest(engine, UploadSource("p1.jsonl", jsonl(*named, prediction))).ok
    result = ingest(engine, UploadSource("p2.jsonl", jsonl({**prediction, "predicted_tps": 170.0})))
    assert [str(p) for p in result.problems] == [
        "p2.jsonl:1: predicted_tps: prediction 'sim' for r/c is stored with predicted_tps 150.0, the file says "
        "170.0; pass --update to apply the file's values"
    ]
    assert ingest(
        engine,
        UploadSource("p2.jsonl", jsonl({**prediction, "predicted_tps": 170.0})),
        IngestPolicy(on_conflict=OnConflict.UPDATE),
    ).ok
    assert history(engine) == [
        (
            login_name(),
            "ingest --update",
            "prediction",
            "sim for r/c",
            "predicted_tps",
            150.0,
            170.0,
            "from p2.jsonl",
        )
    ]


def test_replace_moves_a_file_to_the_right_deployment(db_url, tmp_path):
    bench = tmp_path / "bench.jsonl"
    bench.write_bytes(
        jsonl(
            {"kind": "benchmark", "deployment": "placeholder", "decode_tps": 90.0},
            {"kind": "benchmark", "deployment": "placeholder", "decode_tps": 91.0, "concurrency": 2},
        )
    )
    runner = CliRunner()
    first = runner.invoke(cli, ["--db", db_url, "ingest", "--deployment", "8x H100, TP8", str(bench)])
    assert first.exit_code == 0, first.output
    again = runner.invoke(cli, ["--db", db_url, "ingest", "--deployment", "8x L40S, TP8", str(bench)])
    assert "skipped, already ingested" in again.output
    fixed = runner.invoke(
        cli, ["--db", db_url, "ingest", "--replace", "--deployment", "8x L40S, TP8", str(bench)]
    )
    assert fixed.exit_code == 0, fixed.output
    assert f"replaced the earlier ingest of {bench} (2 benchmark(s) removed)" in fixed.output
    engine = make_engine(db_url)
    with reading(engine) as session:
        placed = session.execute(
            select(Deployment.name, func.count()).join(Benchmark).group_by(Deployment.name)
        ).all()
        files = session.scalar(select(func.count()).select_from(IngestedFile))
    assert placed == [("8x L40S, TP8", 2)] and files == 1
    # the replacement is in the history, under the login name of whoever ran the command
    assert history(engine) == [
        (
            login_name(),
            "ingest --replace",
            "file",
            str(bench),
            None,
            None,
            None,
            f"replaced the earlier ingest of {bench} (2 benchmark(s) removed)",
        )
    ]
    with reading(engine) as session:
        assert session.scalar(select(IngestedFile.ingested_by)) == login_name()
    listed = runner.invoke(cli, ["--db", db_url, "changes", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    [entry] = json.loads(listed.output)
    assert (entry["action"], entry["kind"], entry["who"]) == ("ingest --replace", "file", login_name())


def test_summary_counts_points_already_stored_as_kept_not_stored(engine):
    log = b"".join(
        f"step {n * 50}: {{'train/loss': {1 - n / 10}, 'train/acc_0': 0.5}}\n".encode() for n in range(4)
    )
    first = ingest(engine, UploadSource("train.log", log), IngestPolicy(link=LinkOptions(run="r")))
    assert first.store.metric_points == 8 and first.store.points_kept == 0
    # the same steps again in another file (one more step at the end): 2 stored, 8 kept
    more = log + b"step 200: {'train/loss': 0.5, 'train/acc_0': 0.6}\n"
    second = ingest(engine, UploadSource("train-2.log", more), IngestPolicy(link=LinkOptions(run="r")))
    assert second.store.metric_points == 2 and second.store.points_kept == 8
    assert "8 point(s) already stored at the same run, key and step kept as they were" in describe(second)
