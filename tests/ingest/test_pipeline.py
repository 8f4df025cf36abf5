"""The one ingest pipeline under one policy: what `specdash ingest`'s flags map to, a preview that is the
commit's own summary without a write, and a refusal that is a result."""

import pytest

from specdash.db.engine import make_engine
from specdash.ingest.formats.base import Located
from specdash.ingest.formats.native import FORMAT
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest, preview_ingest
from specdash.ingest.policy import IngestPolicy, Mode, OnConflict, OnInvalid, command_policy
from specdash.ingest.records import RunRecord
from specdash.ingest.sources import Batch, PathSource, UploadSource
from tests.ingest_support import SGLANG, content

PCIE = "8x RTX PRO 6000, TP8, PCIe"
STORY = (SGLANG / "bench_serving_0.5.9.jsonl").read_bytes()


@pytest.mark.parametrize(
    "flags,on_conflict,on_invalid",
    [
        ({}, OnConflict.SKIP, OnInvalid.REFUSE),
        ({"update": True}, OnConflict.UPDATE, OnInvalid.REFUSE),
        ({"replace": True}, OnConflict.REPLACE, OnInvalid.REFUSE),
        ({"update": True, "replace": True}, OnConflict.REPLACE, OnInvalid.REFUSE),
        ({"skip_invalid": True}, OnConflict.SKIP, OnInvalid.SKIP),
        ({"update": True, "skip_invalid": True}, OnConflict.UPDATE, OnInvalid.SKIP),
    ],
)
def test_the_commands_flags_map_onto_one_policy(flags, on_conflict, on_invalid):
    policy = command_policy(**flags)
    assert (policy.on_conflict, policy.on_invalid, policy.mode) == (on_conflict, on_invalid, Mode.COMMIT)
    assert policy == IngestPolicy(on_conflict=on_conflict, on_invalid=on_invalid)


def test_the_commands_link_and_format_are_typed_fields_of_the_policy():
    link = LinkOptions(deployment=PCIE, new_names=True)
    policy = command_policy(link=link, format_name="sglang-bench-serving")
    assert (policy.link, policy.format_name) == (link, "sglang-bench-serving")
    assert command_policy().link == LinkOptions()


@pytest.mark.parametrize(
    "on_conflict,applies,action",
    [
        (OnConflict.SKIP, False, "ingest --update"),
        (OnConflict.UPDATE, True, "ingest --update"),
        (OnConflict.REPLACE, True, "ingest --replace"),
    ],
)
def test_what_each_conflict_policy_writes_over_stored_values(on_conflict, applies, action):
    assert (on_conflict.applies_values, on_conflict.action) == (applies, action)


def test_a_preview_is_the_commits_summary_without_a_write(demo_url):
    engine = make_engine(demo_url)
    before = content(engine)
    link = LinkOptions(deployment=PCIE)
    previewed = ingest(
        engine, UploadSource("upload.jsonl", STORY), IngestPolicy(mode=Mode.PREVIEW, link=link)
    )
    preview = previewed.preview
    assert preview is not None and previewed.advisories is None
    assert preview_ingest(engine, UploadSource("upload.jsonl", STORY), IngestPolicy(link=link)) == preview
    assert content(engine) == before  # nothing written, not even the file's record
    result = ingest(engine, UploadSource("upload.jsonl", STORY), IngestPolicy(link=link))
    assert result.status == "loaded" and result.preview is None
    assert (preview.store, preview.problems, preview.notes) == (
        result.store,
        result.problems,
        result.message or None,
    )
    assert preview.refresh is not None and result.refresh is not None
    assert (preview.refresh.predictions, preview.refresh.new_alerts) == (
        result.refresh.predictions,
        result.refresh.new_alerts,
    )


def test_a_preview_of_a_path_source_writes_nothing(engine):
    before = content(engine)
    path = SGLANG / "bench_serving_0.5.23.jsonl"
    preview = ingest(engine, PathSource(path), IngestPolicy(mode=Mode.PREVIEW)).preview
    assert preview is not None and preview.store is not None and preview.store.created["benchmark"] == 1
    assert content(engine) == before
    assert ingest(engine, PathSource(path)).store == preview.store


def _run_batch(kept: list, ttt_length: int) -> Batch:
    run = RunRecord.model_validate({"kind": "run", "name": "r", "ttt_length": ttt_length})
    return Batch("window", FORMAT, [Located(1, run)], kept=lambda session, result: kept.append(result.status))


def test_a_refusal_is_a_result_and_rolls_back_the_sources_own_step(engine):
    kept: list[str] = []
    assert ingest(engine, _run_batch(kept, 5)).status == "loaded" and kept == ["loaded"]
    before = content(engine)
    refused = ingest(engine, _run_batch(kept, 7))
    assert refused.status == "failed" and refused.store is None and kept == ["loaded"]
    assert [str(p) for p in refused.problems] == [
        "window:1: ttt_length: run 'r' is stored with ttt_length 5, the file says 7; pass --update to apply "
        "the file's values"
    ]
    assert content(engine) == before
    # a followed log keeps what is valid and moves on: its own step (the offset) commits with it
    moved_on = ingest(engine, _run_batch(kept, 7), IngestPolicy(on_invalid=OnInvalid.KEEP))
    assert moved_on.status == "loaded" and len(moved_on.problems) == 1 and kept == ["loaded", "loaded"]


def test_a_file_refused_before_the_write_lock_is_a_result(engine):
    before = content(engine)
    refused = ingest(engine, UploadSource("bad.jsonl", b'{"kind": "run"}\n'))
    assert refused.status == "failed" and refused.store is None and refused.problems
    assert content(engine) == before


def test_each_benchmark_is_stored_with_its_file_and_a_refused_file_leaves_no_row(engine):
    """The file's row is made before its benchmarks, which are inserted with its id; its record count is
    written once they are stored; a file refused whole leaves neither its row nor its benchmarks."""
    from sqlalchemy import select

    from specdash.db.engine import reading
    from specdash.db.models import Benchmark, IngestedFile

    path = SGLANG / "bench_serving_0.5.23.jsonl"
    result = ingest(engine, PathSource(path))
    with reading(engine) as session:
        files = session.scalars(select(IngestedFile)).all()
        assert [(f.path[-len(path.name) :], f.records) for f in files] == [(path.name, 1)]
        owners = session.scalars(select(Benchmark.ingested_file_id)).all()
    assert result.store is not None and owners == [files[0].id]
    bad = UploadSource("bad.jsonl", b'{"kind": "benchmark", "deployment": "x", "decode_tps": -1}\n')
    assert ingest(engine, bad).status == "failed"
    with reading(engine) as session:
        assert session.scalar(select(IngestedFile.id).where(IngestedFile.path == "bad.jsonl")) is None
