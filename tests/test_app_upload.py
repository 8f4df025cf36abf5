"""The Upload page: files are checked before anything is written, saved through the ingest pipeline, and
their new benchmarks, predictions and alerts shown at once."""

from sqlalchemy import func, select

from specdash.app.text import unmd
from specdash.app.uploads import check_upload
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, Checkpoint, IngestedFile, Run
from tests.conftest import FIXTURES
from tests.test_app import run_page, table_with

DASHBOARD = FIXTURES / "dashboard"


def benchmark_count(url: str) -> int:
    with reading(make_engine(url)) as session:
        return session.scalar(select(func.count()).select_from(Benchmark))


def upload(monkeypatch, url: str, *names: str):
    at = run_page(monkeypatch, url, "views/upload.py")
    files = [(name, (DASHBOARD / name).read_bytes(), "application/json") for name in names]
    at.file_uploader[0].set_value(files).run()
    return at


def test_check_upload_reports_like_the_cli():
    bad = check_upload("bad_bench.json", (DASHBOARD / "bad_bench.json").read_bytes())
    assert not bad.ok and bad.format == "specdash"
    assert bad.report.splitlines() == [
        "bad_bench.json:5: benchmarks.1.decode_tps: Input should be greater than 0",
        "bad_bench.json:6: benchmarks.2.accept_length: Input should be greater than or equal to 1",
    ]
    assert not check_upload("empty.json", b"  \n").ok
    assert (
        check_upload("notes.txt", b"hello").report
        == "notes.txt: format not recognised (see 'specdash formats')"
    )
    good = check_upload("deep_rerun.json", (DASHBOARD / "deep_rerun.json").read_bytes())
    assert good.ok and good.summary == "1 benchmark"


def test_valid_upload_creates_the_benchmark_and_shows_its_alert(monkeypatch, demo_url):
    before = benchmark_count(demo_url)
    at = upload(monkeypatch, demo_url, "deep_rerun.json")
    assert not at.exception
    assert [s.value for s in at.success] == ["Valid: ready to save."]
    assert benchmark_count(demo_url) == before  # checking writes nothing
    at.button(key="upload_save").click().run()
    assert not at.exception
    assert benchmark_count(demo_url) == before + 1
    saved = unmd(at.success[0].value)
    assert saved.startswith("deep_rerun.json: 1 record(s) as specdash; created 1 benchmark(s)")
    assert "1 new alert(s)" in saved
    outcome = table_with(at, "is_alert")
    assert outcome["run"].tolist() == ["k25-eagle3-100k-ttt5"] and outcome["checkpoint"].tolist() == [
        "epoch_5"
    ]
    assert outcome["setting"].tolist() == ["EAGLE3 11/1/12"] and outcome["is_alert"].tolist() == [True]
    assert outcome["gap"].iloc[0] > 0.2
    links = [unmd(link.label) for link in at.get("page_link")]
    assert len(links) == 1 and links[0].startswith("Alert #17 (warning): k25-eagle3-100k-ttt5 / epoch_5")
    assert at.get("page_link")[0].proto.query_string == "alert=17"
    # the uploader is empty again, so the same files are not saved twice by accident
    assert not at.file_uploader[0].value


def test_link_overrides_attach_benchmarks_to_the_named_checkpoint(monkeypatch, demo_url):
    at = upload(monkeypatch, demo_url, "deep_rerun.json")
    key = next(k for k in at.session_state if str(k).startswith("upload_links_"))
    at.session_state[key] = {
        "edited_rows": {0: {"run": "k25-eagle3-10k", "checkpoint": "epoch_3"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.button(key="upload_save").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        bench = session.scalars(select(Benchmark).order_by(Benchmark.id.desc())).first()
        linked = session.get(Checkpoint, bench.checkpoint_id)
        assert (session.get(Run, linked.run_id).name, linked.name) == ("k25-eagle3-10k", "epoch_3")


def test_bad_file_shows_every_problem_and_writes_nothing(monkeypatch, demo_url):
    before = benchmark_count(demo_url)
    at = upload(monkeypatch, demo_url, "bad_bench.json", "deep_rerun.json")
    assert not at.exception
    assert at.error[0].value == "2 problem(s): nothing from this file will be written."
    assert (
        at.code[0].value.splitlines()[0]
        == "bad_bench.json:5: benchmarks.1.decode_tps: Input should be greater than 0"
    )
    # only the valid file is offered for saving
    assert at.button(key="upload_save").label == "Save 1 file(s)"
    assert benchmark_count(demo_url) == before
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(func.count()).select_from(IngestedFile)) == 1  # the demo file only


def test_only_bad_files_offer_no_save(monkeypatch, demo_url):
    at = upload(monkeypatch, demo_url, "bad_bench.json")
    assert not [b for b in at.button if b.key == "upload_save"]
