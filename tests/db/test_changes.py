"""The change history: every write that replaces a stored value says who, when, what, from and to."""

from sqlalchemy import func, select

from specdash.answers import edits
from specdash.answers.calibrate import calibrate
from specdash.app.frames import frame
from specdash.db import profiles, runs
from specdash.db.calibration import apply_calibration
from specdash.db.changes import ChangeEntry, acting_as, login_name, recent_changes
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Benchmark, Change, Deployment, IngestedFile, Run

PCIE = "8x RTX PRO 6000, TP8, PCIe"


def changes(engine) -> list[tuple]:
    with reading(engine) as session:
        return [
            (c.who, c.action, c.kind, c.subject, c.field, c.old_value, c.new_value)
            for c in session.scalars(select(Change).order_by(Change.id))
        ]


def test_profile_threshold_and_calibration_saves_are_recorded(demo_url):
    engine = make_engine(demo_url)
    with transaction(engine) as session, acting_as("ana"):
        pcie = session.scalar(select(Deployment).where(Deployment.name == PCIE))
        shown = profiles.profile_values(session, pcie.id)
        # the demo's PCIe profile spends half a step in the all-reduce; ana measured 0.4
        edits.edit_deployment(session, pcie.id, shown, {**shown, "comm_fraction": 0.4})
        edits.set_deployment_threshold(session, pcie.id, 0.2)
        (report,) = calibrate(session)
        first = apply_calibration(session, report)
        second = apply_calibration(session, report)
    assert changes(engine) == [
        ("ana", "profile", "deployment", PCIE, "comm_fraction", 0.5, 0.4),
        ("ana", "threshold", "deployment", PCIE, "gap_threshold", None, 0.2),
        ("ana", "calibrate", "parameter_set", PCIE, "calibrated version", None, first.version),
        ("ana", "calibrate", "parameter_set", PCIE, "calibrated version", first.version, second.version),
    ]
    with transaction(engine) as session:  # the command line: the login name
        restored, _ = edits.restore_parameter_set(session, first.id)
        edits.set_deployment_threshold(session, pcie.id, 0.2)  # no change: nothing recorded
    assert changes(engine)[4:] == [
        (
            login_name(),
            "restore",
            "parameter_set",
            PCIE,
            "calibrated version",
            first.version,
            restored.version,
        )
    ]


def test_run_tags_archive_delete_and_undone_ingest_are_recorded(demo_url):
    engine = make_engine(demo_url)
    with transaction(engine) as session, acting_as("bo"):
        smoke = session.scalar(select(Run).where(Run.name == "k25-eagle3-ttt3-smoke"))
        runs.set_tags(session, smoke.id, ["Smoke", "ttt3"])
        runs.set_archived(session, [smoke.id], True)
        runs.set_archived(session, [smoke.id], True)  # already archived: nothing more
        runs.delete_runs(session, [smoke.id])
        demo_file = session.scalars(select(IngestedFile)).one()
        edits.delete_ingested_file(session, demo_file.id)
    recorded = changes(engine)
    assert recorded[:3] == [
        ("bo", "tags", "run", "k25-eagle3-ttt3-smoke", "tags", [], ["smoke", "ttt3"]),
        ("bo", "archive", "run", "k25-eagle3-ttt3-smoke", "archived", False, True),
        ("bo", "delete", "run", "run(s) k25-eagle3-ttt3-smoke", None, None, None),
    ]
    assert recorded[3][:4] == ("bo", "undo ingest", "file", f"file {demo_file.path}")
    with reading(engine) as session:
        listed = frame(recent_changes(session), ChangeEntry)
        notes = dict(zip(listed["action"], listed["note"], strict=True))
    assert listed["action"].tolist() == ["undo ingest", "delete", "archive", "tags"]  # newest first
    assert notes["delete"].startswith("removed runs: 1, ")
    assert "benchmarks" in notes["undo ingest"]


def test_a_target_named_at_ingest_over_the_stored_one_is_recorded(engine):
    from specdash.ingest.links import LinkOptions
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.policy import IngestPolicy
    from specdash.ingest.sources import UploadSource

    run = b'{"kind": "run", "name": "r", "target_model": "meta-llama/Llama-3.1-8B-Instruct"}\n'
    assert ingest(engine, UploadSource("a.jsonl", run)).ok
    metrics = b'{"kind": "metrics", "run": "r", "step": 10, "values": {"train/loss": 1.5}}\n'
    with acting_as("ana"):
        result = ingest(
            engine,
            UploadSource("b.jsonl", metrics),
            IngestPolicy(link=LinkOptions(target="meta-llama/Llama-3.3-70B-Instruct")),
        )
    assert result.ok, [str(p) for p in result.problems]
    assert changes(engine) == [
        (
            "ana",
            "ingest --target",
            "run",
            "r",
            "target_model",
            "meta-llama/Llama-3.1-8B-Instruct",
            "meta-llama/Llama-3.3-70B-Instruct",
        )
    ]


def test_a_recorded_change_moves_the_store_version(demo_url):
    """Open pages reload when the store version moves: tags and archives change no counted table."""
    from specdash.db.queries import store_version

    engine = make_engine(demo_url)
    with reading(engine) as session:
        before = store_version(session)
        run_id = session.scalar(select(Run.id).where(Run.name == "k25-eagle3-10k"))
    with transaction(engine) as session:
        runs.set_tags(session, run_id, ["baseline-sweep"])
    with reading(engine) as session:
        assert store_version(session) != before


def test_the_advisor_gain_and_the_webhook_are_recorded_the_webhook_masked(engine):
    from specdash.answers.advisories import save_advice_settings
    from specdash.notify import set_webhook_url

    with transaction(engine) as session, acting_as("ana"):
        save_advice_settings(session, 0.07)
        save_advice_settings(session, 0.07)  # unchanged: nothing recorded
        set_webhook_url(session, "https://hooks.slack.com/services/T1/B1/secret1")
        set_webhook_url(session, "https://hooks.slack.com/services/T1/B1/secret2")
        set_webhook_url(session, "")
    recorded = changes(engine)
    assert [c[1:5] for c in recorded] == [
        ("advice", "setting", "global", "advisory_min_gain"),
        ("webhook", "setting", "global", "webhook_url"),
        ("webhook", "setting", "global", "webhook_url"),
        ("webhook", "setting", "global", "webhook_url"),
    ]
    assert {c[0] for c in recorded} == {"ana"}
    assert recorded[0][6] == 0.07
    assert [c[5:] for c in recorded[1:]] == [
        (None, "https://hooks.slack.com/***"),
        ("https://hooks.slack.com/***", "https://hooks.slack.com/*** (another URL)"),
        ("https://hooks.slack.com/***", None),
    ]
    assert "secret" not in repr(recorded)


def test_benchmarks_deleted_move_the_store_version(demo_url):
    """Benchmarks are not counted in the store version (PostgreSQL scans to count): a file replaced by
    itself deletes its benchmark and stores it again under the same id, and the change history moves it."""
    from specdash.db.queries import store_version
    from specdash.ingest.pipeline import ingest
    from specdash.ingest.policy import IngestPolicy, OnConflict
    from specdash.ingest.sources import UploadSource
    from tests.ingest_support import native

    engine = make_engine(demo_url)
    plain = native({"kind": "benchmark", "deployment": "lab box", "concurrency": 3, "decode_tps": 61.0})
    assert ingest(engine, UploadSource("plain.jsonl", plain)).ok

    def version_and_ids() -> tuple:
        with reading(engine) as session:
            ids = (session.scalar(select(func.max(model.id))) for model in (IngestedFile, Benchmark))
            return store_version(session), tuple(ids)

    before, ids = version_and_ids()
    with acting_as("ana"):
        result = ingest(
            engine, UploadSource("plain.jsonl", plain), IngestPolicy(on_conflict=OnConflict.REPLACE)
        )
    assert result.ok and "1 benchmark(s) removed" in result.message
    after, ids_after = version_and_ids()
    assert ids_after == ids  # SQLite numbers the new rows as the deleted ones were
    assert after != before
    assert changes(engine)[-1][:4] == ("ana", "ingest --replace", "file", "plain.jsonl")
