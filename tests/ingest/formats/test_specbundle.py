"""The real SpecBundle data.json, as published, ingested and checked against the file's own numbers."""

import shutil

import pytest
from sqlalchemy import func, select

from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, Checkpoint, Deployment, Run
from specdash.db.schema import upgrade
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from tests.conftest import REAL_FIXTURES, sqlite_url
from tests.ingest_support import benchmarks, content, load

DATA = REAL_FIXTURES / "specbundle-data.json"


@pytest.fixture(scope="module")
def _loaded(tmp_path_factory):
    """Ingest once; each test gets a copy of the database."""
    path = tmp_path_factory.mktemp("specbundle") / "bundle.db"
    engine = make_engine(sqlite_url(path))
    upgrade(engine)
    result = load(engine, DATA)
    with engine.connect() as connection:  # fold the WAL into the file so a plain copy is complete
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path, result


@pytest.fixture
def bundle(_loaded, tmp_path):
    template, result = _loaded
    shutil.copy(template, tmp_path / "bundle.db")
    engine = make_engine(sqlite_url(tmp_path / "bundle.db"))
    yield engine, result
    engine.dispose()


def test_counts_and_what_was_created(bundle):
    engine, result = bundle
    summary = result.store
    assert result.format == "specbundle"
    # 10 target models, one batch size each; 15 drafter repositories; 740 rows of which 240 repeat a
    # baseline already stored for the same model, benchmark and batch size
    assert summary.created == {"deployment": 10, "run": 15, "checkpoint": 15, "benchmark": 500}
    assert (summary.linked, summary.unlinked, summary.duplicates) == (440, 0, 240)
    with reading(engine) as session:
        baselines = session.scalar(select(func.count()).where(Benchmark.speculative_algorithm.is_(None)))
        assert baselines == 60  # 8 models x 7 benchmarks + 2 coder models x 2
        assert set(session.scalars(select(Checkpoint.name))) == {"published"}
        assert "lmsys/SGLang-EAGLE3-Llama-3.3-70B-Instruct-Spec for ge" in set(
            session.scalars(select(Run.name))
        )


def test_batch_size_1_rows_field_by_field(bundle):
    engine, _ = bundle
    rows = benchmarks(engine, dataset="gsm8k", num_steps=3, topk=1, concurrency=1)
    by_drafter = {b.checkpoint.run.name: b for b in rows}
    official = by_drafter["lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"]
    assert official.deployment.name == "SpecBundle: Llama-3.1-8B-Instruct"
    assert (official.speculative_algorithm, official.num_draft_tokens) == ("EAGLE3", 4)
    assert official.output_throughput == 228.64232714994796 and official.decode_tps == 228.64232714994796
    assert official.accept_length == 1.7165139181419709 and official.checkpoint.name == "published"
    assert official.drafter_path == "lmsys/sglang-EAGLE3-LLaMA3.1-Instruct-8B"
    assert (
        by_drafter["lmsys/SGLang-EAGLE3-Llama-3.1-8B-Instruct-SpecForge"].accept_length == 2.5481878001819607
    )
    (baseline,) = benchmarks(engine, dataset="gsm8k", concurrency=1, speculative_algorithm=None)
    assert baseline.output_throughput == 181.81151788749455 and baseline.label == "Wihtout EAGLE3"


def test_batch_size_8_decode_is_per_request(bundle):
    engine, _ = bundle
    (row,) = [
        b
        for b in benchmarks(engine, dataset="mtbench", num_steps=7, topk=1, concurrency=8)
        if b.checkpoint and b.checkpoint.run.name == "lmsys/sglang-EAGLE3-LLaMA3.3-Instruct-70B"
    ]
    assert row.deployment.name == "SpecBundle: Llama-3.3-70B-Instruct"
    assert row.output_throughput == 1425.2993761886291
    assert row.decode_tps == pytest.approx(1425.2993761886291 / 8)
    assert row.accept_length == 3.8789368991048736 and row.num_draft_tokens == 8
    with reading(engine) as session:
        deployment = session.scalar(select(Deployment).where(Deployment.name == row.deployment.name))
        assert (deployment.target_model, deployment.engine, deployment.tp_size) == (
            "Llama-3.3-70B-Instruct",
            "sglang",
            None,
        )


def test_the_same_rows_in_another_file_add_nothing(bundle):
    engine, _ = bundle
    before = content(engine)
    again = ingest(engine, UploadSource("copy.json", DATA.read_bytes() + b"\n"))
    assert again.status == "loaded" and again.store.duplicates == 740 and not again.store.created
    after = content(engine)
    assert len(after.pop("ingested_file")) == len(before.pop("ingested_file")) + 1
    assert after == before
