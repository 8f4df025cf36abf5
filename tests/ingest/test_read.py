"""Bad input: every problem reported as file:line: field: message, and the database left as it was."""

import json

import pytest

from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnInvalid
from specdash.ingest.problems import format_report
from specdash.ingest.sources import PathSource, UploadSource
from tests.conftest import FIXTURES
from tests.ingest_support import SGLANG, content, load

BAD = FIXTURES / "bad"
DEPLOYMENT = LinkOptions(deployment="1x H100")


@pytest.fixture
def used(engine):
    """A database that already holds data: a failed file must leave all of it as it was."""
    load(engine, SGLANG / "bench_serving_0.5.23.jsonl")
    load(engine, FIXTURES / "specforge" / "wandb_export.csv")
    return engine


@pytest.mark.parametrize(
    "name,expected",
    [
        (
            "truncated_vllm.json",
            [":1: invalid JSON: file ends before the JSON does (truncated?); expected ',' or '}'"],
        ),
        (
            "wrong_types.jsonl",
            [
                ":2: max_concurrency: Input should be a valid integer, unable to parse string as an integer",
                ":2: output_throughput: Input should be a valid number, unable to parse string as a number",
                ":3: accept_length: Input should be a finite number",
                ":4: output_throughput: Input should be greater than or equal to 0 (got -5.0)",
                ":4: median_tpot_ms: Input should be greater than 0 (got -11.1)",
            ],
        ),
        (
            "draft_tokens_below_steps.jsonl",
            [":1: num_draft_tokens: 3 draft tokens cannot hold 5 draft steps (need >= num_steps)"],
        ),
        (
            "specbundle_bad.json",
            [
                ":20: Llama-3.1-8B-Instruct.gsm8k.results.0.metrics.1.accept_length: Input should be greater than or equal to 1 (got 0.5)",
                ":22: Llama-3.1-8B-Instruct.gsm8k.results.0.metrics.2.Name: Field required",
                ":29: Llama-3.1-8B-Instruct.gsm8k.results.1.batch_size: Input should be greater than or equal to 1 (got 0)",
            ],
        ),
    ],
)
def test_bad_files_report_every_problem_and_write_nothing(used, name, expected):
    before = content(used)
    result = ingest(used, PathSource(BAD / name), IngestPolicy(link=DEPLOYMENT))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [f"{BAD / name}{line}" for line in expected]
    assert content(used) == before


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "bad.jsonl: file is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "bad.jsonl: binary file, not a text format specdash reads"),
        (b"hello, world\n", "bad.jsonl: format not recognised; pass --format (see 'specdash formats')"),
        (
            b'{"backend": "sglang", "dataset_name": "x", "output_throughput": 1.0}\n\xff\xfe\n',
            "bad.jsonl: not UTF-8 text: invalid start byte",
        ),
    ],
)
def test_unreadable_files(used, data, message):
    before = content(used)
    result = ingest(used, UploadSource("bad.jsonl", data), IngestPolicy(link=DEPLOYMENT))
    assert result.status == "failed" and str(result.problems[0]) == message
    assert content(used) == before


def test_a_record_of_10_mb_is_refused_without_reading_it_whole(used):
    line = json.loads(
        (SGLANG / "bench_serving_0.5.2.jsonl").read_text().splitlines()[0].replace("Infinity", "1")
    )
    line["tag"] = "x" * (10 * 1024 * 1024)
    data = (json.dumps(line) + "\n").encode()
    before = content(used)
    result = ingest(used, UploadSource("big.jsonl", data), IngestPolicy(link=DEPLOYMENT))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        f"big.jsonl:1: record of {len(data) - 1:,} characters is over the size cap"
    ]
    assert content(used) == before


def test_problems_are_capped_with_a_count_and_parse_errors_come_first(used):
    good = (SGLANG / "bench_serving_0.5.2.jsonl").read_text().splitlines()[0]
    bad = good.replace('"output_throughput": 89.9459', '"output_throughput": -1')
    data = "\n".join([bad] * 60 + ["{not json"]) + "\n"
    result = ingest(used, UploadSource("many.jsonl", data.encode()), IngestPolicy(link=DEPLOYMENT))
    report = format_report(result.problems).splitlines()
    assert report[0].startswith("many.jsonl:61: invalid JSON")
    assert report[1] == "many.jsonl:1: output_throughput: Input should be greater than or equal to 0 (got -1)"
    assert len(report) == 51 and report[-1] == "... and 11 more problems"


def test_skip_invalid_loads_the_good_records_and_reports_the_rest(used):
    result = ingest(
        used, PathSource(BAD / "wrong_types.jsonl"), IngestPolicy(link=DEPLOYMENT, on_invalid=OnInvalid.SKIP)
    )
    assert result.status == "loaded" and result.store.created["benchmark"] == 1
    assert len(result.problems) == 5


def test_the_same_file_twice_is_skipped(used):
    first = load(used, SGLANG / "bench_serving_0.5.2.jsonl", IngestPolicy(link=DEPLOYMENT))
    before = content(used)
    again = ingest(used, PathSource(SGLANG / "bench_serving_0.5.2.jsonl"), IngestPolicy(link=DEPLOYMENT))
    assert again.status == "skipped" and again.sha256 == first.sha256
    assert "already ingested as" in again.message and content(used) == before


def test_cli_exit_code_and_report(invoke, db_url):
    result = invoke(db_url, "ingest", "--deployment", "1x H100", str(BAD / "wrong_types.jsonl"))
    assert result.exit_code == 1
    assert f"{BAD / 'wrong_types.jsonl'}:3: accept_length: Input should be a finite number" in result.output
    assert "nothing written (5 problem(s))" in result.output
    assert "Fix the records or pass --skip-invalid" in result.output


def test_unknown_forced_format_is_a_usage_problem(invoke, db_url):
    result = invoke(db_url, "ingest", "--format", "nope", str(SGLANG / "bench_serving_0.5.2.jsonl"))
    assert result.exit_code == 2
    assert "Invalid value for '--format'" in result.output
    assert "'nope' is not one of" in result.output and "'sglang-bench-serving'" in result.output


def test_a_forced_format_that_does_not_fit_is_refused(invoke, db_url, used):
    # bench_one_batch_server results read as bench_serving would store the batch's aggregate as per-request
    path = SGLANG / "bench_one_batch_server.jsonl"
    before = content(used)
    result = ingest(used, PathSource(path), IngestPolicy(format_name="sglang-bench-serving", link=DEPLOYMENT))
    assert result.status == "failed"
    assert [str(p) for p in result.problems] == [
        f"{path}: --format sglang-bench-serving does not fit this file: it reads as sglang-one-batch"
    ]
    assert content(used) == before

    cli = invoke(db_url, "ingest", "--format", "sglang-bench-serving", "--deployment", "1x H100", str(path))
    assert cli.exit_code == 1 and "does not fit this file" in cli.output
    assert "--skip-invalid" not in cli.output  # it cannot help: no record was read


def test_a_forced_format_that_fits_is_used(used):
    result = ingest(
        used,
        PathSource(SGLANG / "bench_one_batch_server.jsonl"),
        IngestPolicy(format_name="sglang-one-batch", link=DEPLOYMENT),
    )
    assert result.ok and result.format == "sglang-one-batch"


def test_skip_invalid_is_not_offered_for_a_file_it_cannot_help(invoke, db_url, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    result = invoke(db_url, "ingest", str(path))
    assert result.exit_code == 1 and "format not recognised" in result.output
    assert "--skip-invalid" not in result.output
