"""The upload page's dry run: what a file would link to and which alerts it would raise, writing nothing."""

from specdash.db.engine import make_engine
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import ingest, preview_ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.conftest import FIXTURES
from tests.ingest_support import SGLANG, content

PCIE = "8x RTX PRO 6000, TP8, PCIe"
STORY = (SGLANG / "bench_serving_0.5.9.jsonl").read_bytes()


def test_preview_shows_links_and_gaps_without_writing(demo_url):
    engine = make_engine(demo_url)
    before = content(engine)
    preview = preview_ingest(
        engine, UploadSource("upload.jsonl", STORY), IngestPolicy(link=LinkOptions(deployment=PCIE))
    )
    assert preview.ok and preview.format == "sglang-bench-serving" and preview.already_ingested is None
    (link,) = preview.links
    assert (link.line, link.deployment, link.run, link.checkpoint, link.how) == (
        1,
        PCIE,
        "k25-eagle3-10k",
        "epoch_3",
        "by path",
    )
    (gap,) = preview.gaps
    assert gap["severity"] == "critical" and "algorithm_mismatch" in gap["diagnoses"]
    assert gap["gap"] > 0.45 and preview.refresh.new_alerts == 1
    assert content(engine) == before


def test_the_user_edits_the_links_then_ingests_what_was_previewed(demo_url):
    engine = make_engine(demo_url)
    edited = LinkOptions(run="k25-eagle3-100k-ttt5", checkpoint="epoch_5", deployment=PCIE)
    preview = preview_ingest(engine, UploadSource("upload.jsonl", STORY), IngestPolicy(link=edited))
    assert [(link.run, link.checkpoint, link.how) for link in preview.links] == [
        ("k25-eagle3-100k-ttt5", "epoch_5", "by name")
    ]
    result = ingest(engine, UploadSource("upload.jsonl", STORY), IngestPolicy(link=edited))
    assert [(link.run, link.checkpoint) for link in result.store.links] == [
        ("k25-eagle3-100k-ttt5", "epoch_5")
    ]
    again = preview_ingest(engine, UploadSource("upload.jsonl", STORY), IngestPolicy(link=edited))
    assert again.already_ingested == "upload.jsonl" and again.store.duplicates == 1


def test_preview_of_what_would_be_created(engine):
    before = content(engine)
    preview = preview_ingest(
        engine, UploadSource("serving.jsonl", (SGLANG / "bench_serving_0.5.23.jsonl").read_bytes())
    )
    assert preview.store.created == {"deployment": 1, "run": 1, "checkpoint": 1, "benchmark": 1}
    assert (preview.links[0].run, preview.links[0].how) == ("llama-eagle3", "created from path")
    assert content(engine) == before


def test_preview_reports_problems_like_ingest(engine):
    data = (FIXTURES / "bad" / "wrong_types.jsonl").read_bytes()
    preview = preview_ingest(
        engine, UploadSource("bad.jsonl", data), IngestPolicy(link=LinkOptions(deployment="d"))
    )
    assert preview.format == "sglang-bench-serving"
    assert [str(p) for p in preview.problems][:1] == [
        "bad.jsonl:2: max_concurrency: Input should be a valid integer, unable to parse string as an integer"
    ]
    unknown = preview_ingest(engine, UploadSource("what.txt", b"hello\n"))
    assert not unknown.ok and str(unknown.problems[0]).endswith(
        "format not recognised; pass --format (see 'specdash formats')"
    )
