"""specdash's own format: documents and JSONL, every problem reported with its line, nothing half-written."""

import json
import math

import pytest
from sqlalchemy import func, select

from specdash.db.engine import reading
from specdash.db.models import (
    Benchmark,
    Checkpoint,
    Deployment,
    Gap,
    IngestedFile,
    MetricPoint,
    Prediction,
    Run,
)
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy, OnInvalid
from specdash.ingest.sources import PathSource, UploadSource
from tests.conftest import FIXTURES

NATIVE = FIXTURES / "native"


def table_counts(engine) -> dict[str, int]:
    with reading(engine) as session:
        return {
            m.__tablename__: session.scalar(select(func.count()).select_from(m))
            for m in (Deployment, Run, Checkpoint, MetricPoint, Benchmark, Prediction, Gap, IngestedFile)
        }


def test_document_is_stored_field_by_field(engine):
    result = ingest(engine, PathSource(NATIVE / "bench_doc.json"))
    assert result.status == "loaded", result.problems
    with reading(engine) as session:
        bench = session.scalar(select(Benchmark).where(Benchmark.speculative_algorithm == "EAGLE3"))
        assert bench.checkpoint.name == "epoch_2_step_24000"  # linked by drafter path
        assert bench.checkpoint.run.name == "llama-eagle3-a"
        assert (
            bench.decode_tps,
            bench.accept_length,
            bench.num_steps,
            bench.topk,
            bench.num_draft_tokens,
        ) == (140.2, 2.9, 3, 1, 4)
        assert bench.dataset == "gsm8k" and bench.source_format == "specdash"
        assert bench.ingested_file_id is not None
        baseline = session.scalar(select(Benchmark).where(Benchmark.speculative_algorithm.is_(None)))
        assert baseline.checkpoint_id is None and baseline.decode_tps == 60.5
        ckpt = bench.checkpoint
        assert [p.rate for p in ckpt.position_acceptance] == [0.8, 0.7, 0.65, 0.6]
        assert session.scalar(select(func.count()).select_from(MetricPoint)) == 4
        sources = sorted(session.scalars(select(Prediction.source)))
        assert sources == ["my-sim", "theory"]
        theory = session.scalar(select(Prediction).where(Prediction.source == "theory"))
        # measured baseline 60.5 tok/s: T_base 16.53 ms; + 3 x 0.8 ms drafting; tau from 0.8/0.7/0.65.
        # The profile states f = 0.3 and the draft cost; the priors give the rest: a round overhead of 0.10 of
        # the step's compute part (0.7 T_base), and verify compute growing by 0.002 per extra token plus the
        # (here negligible) dense roofline of an L40S, sqrt(1 + (n/420)^2), from 1 to 4 tokens.
        tau = 1 + 0.8 + 0.8 * 0.7 + 0.8 * 0.7 * 0.65
        t_base = 1000 / 60.5
        growth = (math.hypot(1, 4 / 420) / math.hypot(1, 1 / 420) - 1) / 3 + 0.002
        round_ms = t_base * (0.7 * (1 + 3 * growth) + 0.3) + 2.4 + 0.10 * 0.7 * t_base
        assert theory.accept_length == pytest.approx(tau)
        assert theory.predicted_tps == pytest.approx(1000 * tau / round_ms)
        assert session.scalar(select(func.count()).select_from(Gap)) == 2


def test_jsonl_records(engine):
    result = ingest(engine, PathSource(NATIVE / "records.jsonl"))
    assert result.status == "loaded", result.problems
    assert result.store.created["benchmark"] == 2 and result.store.linked == 1


def test_every_problem_is_reported_with_its_line_and_nothing_is_written(engine):
    ingest(engine, PathSource(NATIVE / "records.jsonl"))
    before = table_counts(engine)
    result = ingest(engine, PathSource(NATIVE / "bad_doc.json"))
    assert result.status == "failed"
    messages = [str(p) for p in result.problems]
    path = str(NATIVE / "bad_doc.json")
    assert (
        f"{path}:8: benchmarks.1.decode_tps: Input should be greater than or equal to 0.01 (got -3.0)"
        in messages
    )
    assert (
        f"{path}:9: benchmarks.2.accept_length: Input should be greater than or equal to 1 (got 0.5)"
        in messages
    )
    assert (
        f"{path}:9: benchmarks.2.num_draft_tokens: 3 draft tokens cannot hold 5 draft steps (need >= num_steps)"
        in messages
    )
    assert (
        f"{path}:11: benchmarks.3.decode_tps: Input should be a valid number, unable to parse string as a number"
        in messages
    )
    assert f"{path}:11: benchmarks.3.colour: Extra inputs are not permitted" in messages
    assert table_counts(engine) == before


def test_skip_invalid_loads_the_good_records(engine):
    result = ingest(engine, PathSource(NATIVE / "bad_doc.json"), IngestPolicy(on_invalid=OnInvalid.SKIP))
    assert result.status == "loaded"
    assert result.store.created["benchmark"] == 1 and len(result.problems) == 5


def test_reingesting_a_file_changes_nothing(engine):
    ingest(engine, PathSource(NATIVE / "bench_doc.json"))
    before = table_counts(engine)
    again = ingest(engine, PathSource(NATIVE / "bench_doc.json"))
    assert again.status == "skipped"
    assert table_counts(engine) == before


def test_same_records_in_another_file_are_not_duplicated(engine):
    ingest(engine, PathSource(NATIVE / "bench_doc.json"))
    before = table_counts(engine)
    text = (NATIVE / "bench_doc.json").read_text()
    result = ingest(engine, UploadSource("copy.json", (text + "\n").encode()))
    assert result.status == "loaded" and result.store.duplicates == 2
    after = table_counts(engine)
    assert after.pop("ingested_file") == before.pop("ingested_file") + 1
    assert after == before


@pytest.mark.parametrize(
    "content,message",
    [
        (b"", "file is empty"),
        (b"\x00\x01\x02binary", "binary file"),
        (b'{"specdash": 1, "runs": [{"name": "a"}', "invalid JSON"),
        (b'{"specdash": 1, "runs": [{"name": "a", "ttt_length": NaN}]}', "NaN is not a number JSON allows"),
        (b'{"specdash": 2, "runs": []}', "format version 2 is not 1"),
        (b'{"specdash": 1, "runs": []}', "no records found"),
        (b'{"kind": "benchmark", "deployment": "x", "decode_tps": 1}\nnot json\n', "2: invalid JSON"),
        (b'{"kind": "rocket", "name": "x"}\n', "1: kind: unknown record kind 'rocket'"),
    ],
)
def test_bad_files(engine, content, message):
    before = table_counts(engine)
    result = ingest(engine, UploadSource("bad.json", content))
    assert result.status == "failed"
    assert any(message in str(p) for p in result.problems), [str(p) for p in result.problems]
    assert table_counts(engine) == before


def test_cli_reports_file_line_field_and_exit_1(invoke, db_url):
    result = invoke(db_url, "ingest", str(NATIVE / "bad_doc.json"))
    assert result.exit_code == 1
    assert (
        "bad_doc.json:8: benchmarks.1.decode_tps: Input should be greater than or equal to 0.01"
        in result.output
    )
    assert "Fix the records or pass --skip-invalid" in result.output


@pytest.mark.parametrize(
    ("engine_name", "draft_factor", "overhead_factor"), [("pytorch", 0.35, 0.5), ("sglang", 1, 1)]
)
def test_an_eager_harness_deployment_gets_cheaper_drafting(
    engine, engine_name, draft_factor, overhead_factor
):
    """The deployment's engine chooses the harness priors. Vicuna-7B (dense, 7B) on one A100 (knee 156
    tokens), EAGLE at 5 steps in a chain (6 tokens verified), baseline 40 tok/s (a 25 ms step), measured
    accept length 3.2 and no training rates: drafting 0.085 x (8/7)^0.4 of the step a draft step and
    overhead 0.10 of it, times 0.35 and 0.5 in an eager PyTorch harness; verify growth from the roofline
    plus 0.002 per extra token."""
    lines = [
        {
            "kind": "deployment",
            "name": "a100",
            "gpu": "A100 80GB",
            "tp_size": 1,
            "engine": engine_name,
            "target_model": "lmsys/vicuna-7b-v1.3",
        },
        {"kind": "run", "name": "v7", "speculative_algorithm": "EAGLE"},
        {"kind": "checkpoint", "run": "v7", "name": "final"},
        {"kind": "benchmark", "deployment": "a100", "decode_tps": 40.0, "dataset": "mtbench"},
        {
            "kind": "benchmark",
            "deployment": "a100",
            "run": "v7",
            "checkpoint": "final",
            "dataset": "mtbench",
            "speculative_algorithm": "EAGLE",
            "num_steps": 5,
            "topk": 1,
            "num_draft_tokens": 6,
            "decode_tps": 100.0,
            "accept_length": 3.2,
        },
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines).encode()
    result = ingest(engine, UploadSource("harness.jsonl", body))
    assert result.status == "loaded", [str(p) for p in result.problems]
    growth = (math.hypot(1, 6 / 156) / math.hypot(1, 1 / 156) - 1) / 5 + 0.002
    draft = 0.085 * (8 / 7) ** 0.4 * draft_factor * 25.0
    round_ms = 25.0 * (1 + 5 * growth) + 5 * draft + 0.10 * overhead_factor * 25.0
    with reading(engine) as session:
        theory = session.scalar(select(Prediction).where(Prediction.source == "theory"))
        assert theory.accept_length == pytest.approx(3.2)
        assert theory.predicted_tps == pytest.approx(1000 * 3.2 / round_ms)
