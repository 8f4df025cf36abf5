"""The Upload page: files are ingested as a dry run before anything is written, saved through
ingest/pipeline.py, and their new benchmarks, predictions and alerts shown at once."""

from sqlalchemy import func, select

from specdash.app import uploads
from specdash.app.text import unmd
from specdash.db.engine import make_engine, reading
from specdash.db.models import Benchmark, Checkpoint, Deployment, IngestedFile, Run
from specdash.ingest.links import LinkOptions
from specdash.ingest.pipeline import preview_ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.sources import UploadSource
from tests.app_support import run_page, table_with
from tests.conftest import FIXTURES

DASHBOARD = FIXTURES / "dashboard"
PCIE = "8x RTX PRO 6000, TP8, PCIe"
SGLANG = "sglang_bench_serving_deep.jsonl"  # SGLang 0.5.9 bench_serving: the TTT-5 drafter at 11 steps


def count(url: str, model) -> int:
    with reading(make_engine(url)) as session:
        return session.scalar(select(func.count()).select_from(model))


def upload(monkeypatch, url: str, *names: str):
    at = run_page(monkeypatch, url, "views/upload.py")
    files = [(name, (DASHBOARD / name).read_bytes(), "application/octet-stream") for name in names]
    at.file_uploader[0].set_value(files).run()
    return at


def set_links(at, **cells):
    """Type into the first row of the link editor (AppTest seeds a keyed data_editor's edits)."""
    key = next(k for k in at.session_state if str(k).startswith("upload_links_"))
    at.session_state[key] = {"edited_rows": {0: cells}, "added_rows": [], "deleted_rows": []}
    return at.run()


def test_preview_helpers_report_like_the_cli(demo_url):
    engine = make_engine(demo_url)
    bad = preview_ingest(engine, UploadSource("bad_bench.json", (DASHBOARD / "bad_bench.json").read_bytes()))
    assert not uploads.can_save(bad)
    assert uploads.report(bad).splitlines() == [
        "bad_bench.json:5: benchmarks.1.decode_tps: Input should be greater than or equal to 0.01 (got -4.0)",
        "bad_bench.json:6: benchmarks.2.accept_length: Input should be greater than or equal to 1 (got 0.4)",
    ]
    deep = preview_ingest(
        engine,
        UploadSource(SGLANG, (DASHBOARD / SGLANG).read_bytes()),
        IngestPolicy(link=LinkOptions(deployment=PCIE)),
    )
    assert uploads.can_save(deep) and uploads.would_create(deep) == "1 benchmark"
    assert uploads.links_frame(deep).to_dict("records") == [
        {
            "line": 1,
            "deployment": PCIE,
            "run": "k25-eagle3-100k-ttt5",
            "checkpoint": "epoch_5",
            "matched": "by path",
            "notes": "",
        }
    ]
    gaps = uploads.gaps_frame(deep)
    assert gaps["severity"].tolist() == ["warning"] and gaps["gap"].iloc[0] > 0.25
    assert count(demo_url, Benchmark) == 15  # a preview writes nothing


def test_sglang_upload_creates_the_benchmark_and_shows_its_gap(monkeypatch, demo_url):
    at = upload(monkeypatch, demo_url, SGLANG)
    assert not at.exception
    # as the file says: a deployment named after the served model, with no profile to predict from
    links = table_with(at, "matched")
    assert links["deployment"].tolist() == ["Kimi-K2.5, TP8, sglang"]
    assert any("would add 1 benchmark, 1 deployment" in unmd(m.value) for m in at.markdown)
    set_links(at, deployment=PCIE)
    assert table_with(at, "matched")["deployment"].tolist() == [PCIE]
    assert table_with(at, "diagnoses")["diagnoses"].tolist() == ["beyond_trained_depth, acceptance_shortfall"]
    assert count(demo_url, Benchmark) == 15
    at.button(key="upload_save").click().run()
    assert not at.exception
    assert count(demo_url, Benchmark) == 16
    saved = unmd(at.success[0].value)
    assert saved.startswith(f"{SGLANG}: 1 record(s) as sglang-bench-serving; created 1 benchmark(s)")
    assert "1 new alert(s)" in saved
    outcome = table_with(at, "is_alert")
    assert outcome[["run", "checkpoint", "setting", "deployment"]].values.tolist() == [
        ["k25-eagle3-100k-ttt5", "epoch_5", "EAGLE3 11/1/12", PCIE]
    ]
    assert outcome["measured_tps"].iloc[0] == 1000 / 8.45  # 1000 / median TPOT
    assert outcome["is_alert"].tolist() == [True] and float(outcome["gap"].iloc[0].rstrip("%")) > 25
    links = at.get("page_link")
    assert len(links) == 1 and unmd(links[0].label).startswith(
        "Alert #16 (warning): k25-eagle3-100k-ttt5 / epoch_5"
    )
    assert links[0].proto.query_string == "alert=16"
    assert not at.file_uploader[0].value  # an empty uploader: the same files are not saved twice by accident
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(func.count()).select_from(Deployment)) == 2  # the override created none


def test_native_upload_linked_to_a_named_checkpoint(monkeypatch, demo_url):
    at = upload(monkeypatch, demo_url, "deep_rerun.json")
    set_links(at, run="k25-eagle3-10k", checkpoint="epoch_3")
    assert table_with(at, "matched")[["run", "checkpoint"]].values.tolist() == [["k25-eagle3-10k", "epoch_3"]]
    at.button(key="upload_save").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        bench = session.scalars(select(Benchmark).order_by(Benchmark.id.desc())).first()
        linked = session.get(Checkpoint, bench.checkpoint_id)
        assert (session.get(Run, linked.run_id).name, linked.name) == ("k25-eagle3-10k", "epoch_3")


def test_bad_file_shows_every_problem_and_writes_nothing(monkeypatch, demo_url):
    at = upload(monkeypatch, demo_url, "bad_bench.json", SGLANG)
    assert not at.exception
    assert at.error[0].value == "2 problem(s): nothing from this file will be written."
    assert at.code[0].value.splitlines() == [
        "bad_bench.json:5: benchmarks.1.decode_tps: Input should be greater than or equal to 0.01 (got -4.0)",
        "bad_bench.json:6: benchmarks.2.accept_length: Input should be greater than or equal to 1 (got 0.4)",
    ]
    assert at.button(key="upload_save").label == "Save 1 file(s)"  # only the valid file
    assert count(demo_url, Benchmark) == 15
    assert count(demo_url, IngestedFile) == 1  # the demo file only


def test_only_bad_or_known_files_offer_no_save(monkeypatch, demo_url):
    at = upload(monkeypatch, demo_url, "bad_bench.json")
    assert not [b for b in at.button if b.key == "upload_save"]
    at = upload(monkeypatch, demo_url, SGLANG)
    at.button(key="upload_save").click().run()
    again = upload(monkeypatch, demo_url, SGLANG)
    assert unmd(again.info[0].value).startswith(f"Already stored as {SGLANG}")
    assert not [b for b in again.button if b.key == "upload_save"]


MIXED = (
    b'{"specdash": 1, "benchmarks": ['
    b'{"deployment": "8x RTX PRO 6000, TP8, PCIe", "decode_tps": 91.0, "dataset": "gsm8k"},'
    b'{"deployment": "8x RTX PRO 6000, TP8, PCIe", "drafter_path": "/ckpt/k25-eagle3-100k-ttt5/epoch_5",'
    b' "speculative_algorithm": "EAGLE3", "num_steps": 11, "topk": 1, "num_draft_tokens": 12,'
    b' "dataset": "gsm8k", "decode_tps": 118.4, "accept_length": 2.5}]}'
)


def test_a_baseline_next_to_an_alert_reads_alert_n_and_says_what_had_no_prediction(monkeypatch, demo_url):
    """The bugs: `Alert #17.0` (the baseline's missing gap made the ids floats), and "the measurements agree
    with the predictions" said of a benchmark that got no prediction."""
    at = run_page(monkeypatch, demo_url, "views/upload.py")
    at.file_uploader[0].set_value([("mixed.json", MIXED, "application/json")]).run()
    at.button(key="upload_save").click().run()
    assert not at.exception
    labels = [unmd(link.label) for link in at.get("page_link")]
    assert len(labels) == 1 and labels[0].startswith("Alert #17 (warning)"), labels
    assert any("1 new benchmark(s) got no prediction" in unmd(i.value) for i in at.info)
    outcome = table_with(at, "is_alert")
    baseline = outcome[outcome["setting"] == "no speculation"].iloc[0]
    assert baseline["source"] == "-" and baseline["run"] == "-"  # not "None"


def test_a_look_alike_name_is_refused_unless_the_box_says_new_as_the_cli_flag_does(monkeypatch, demo_url):
    look_alike = PCIE.replace("PCIe", "PCle")  # a lower-case L for the capital I
    at = upload(monkeypatch, demo_url, SGLANG)
    set_links(at, deployment=look_alike)
    assert not at.exception
    [report] = [c.value for c in at.code]
    assert f"deployment '{look_alike}' is stored nowhere; did you mean '{PCIE}'?" in report
    assert any("Create look-alike names as new" in unmd(i.value) for i in at.info)
    assert not [b for b in at.button if b.key == "upload_save"]  # nothing to save
    at.checkbox(key="upload_new_names").check().run()
    assert not at.code and any(s.value == "Valid: ready to save." for s in at.success)
    at.button(key="upload_save").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        names = set(session.scalars(select(Deployment.name)))
    assert {PCIE, look_alike} <= names  # created as a new deployment, next to the stored one
    assert any(f"deployment '{look_alike}'" in unmd(c.value) for c in at.caption)  # the summary says so


def test_a_file_with_repeats_is_valid_and_names_its_repeat_group(monkeypatch, demo_url, tmp_path):
    """Two no-speculation runs of one load and dataset at 64.5 and 63.7 tok/s: both saved, the page says
    they are a repeat group."""
    run = '{"kind": "benchmark", "deployment": "1x H100", "concurrency": 1, "dataset": "mtbench", "decode_tps": %s}'
    data = f"{run % 64.5}\n{run % 63.7}\n".encode()
    preview = preview_ingest(make_engine(demo_url), UploadSource("repeats.jsonl", data))
    assert uploads.can_save(preview) and uploads.would_create(preview).startswith("2 benchmark")
    assert preview.notes == (
        "1 repeat group(s) kept, each measurement stored: '1x H100' no speculation at concurrency 1 on mtbench: "
        "64.5 and 63.7 tok/s (lines 1, 2)"
    )
    at = run_page(monkeypatch, demo_url, "views/upload.py")
    at.file_uploader[0].set_value([("repeats.jsonl", data, "application/octet-stream")]).run()
    assert not at.exception
    assert any("1 repeat group(s) kept" in unmd(caption.value) for caption in at.caption)
