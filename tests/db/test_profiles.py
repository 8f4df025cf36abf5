"""Settings: thresholds and deployment profiles, in db/profiles.py and through the Settings page."""

import pytest
from sqlalchemy import select

from specdash.answers import edits
from specdash.app.text import unmd
from specdash.db import profiles
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert, Deployment, Gap, ParameterSet, Prediction
from specdash.db.profiles import ProfileError
from specdash.db.queries import open_alert_counts
from specdash.db.settings import get_gap_threshold
from tests.app_support import run_page, table_with

PCIE = "8x RTX PRO 6000, TP8, PCIe"
NVLINK = "8x H200, TP8, NVLink"


@pytest.fixture
def demo(demo_url):
    engine = make_engine(demo_url)
    yield engine
    engine.dispose()


def pcie(session) -> Deployment:
    return session.scalars(select(Deployment).where(Deployment.name == PCIE)).one()


def test_edited_profile_becomes_a_new_version_and_moves_predictions(demo):
    with reading(demo) as session:
        values = {name: getattr(pcie(session), name) for name in profiles.PROFILE_FIELDS}
        story_before = session.get(Gap, 1).predicted_tps
    # a round overhead of 12.5 ms is what the EAGLE-flag benchmark's back-solve says is missing
    with transaction(demo) as session:
        deployment, summary = edits.save_deployment(
            session, {**values, "round_overhead_ms": 12.5}, pcie(session).id
        )
    assert summary.predictions > 0
    with reading(demo) as session:
        sets = session.scalars(
            select(ParameterSet)
            .where(ParameterSet.deployment_id == deployment.id)
            .order_by(ParameterSet.version)
        ).all()
        story_after = session.get(Gap, 1).predicted_tps
    assert [(s.is_active, s.round_overhead_ms) for s in sets[-2:]] == [(False, 0.0), (True, 12.5)]
    assert sets[-1].version == sets[-2].version + 1 and sum(s.is_active for s in sets) == 1
    assert story_before == pytest.approx(161.0, abs=0.1)
    assert story_after == pytest.approx(1000 * 2.0998 / (13.041 + 12.5), abs=0.2)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"comm_fraction": 1.5}, "comm_fraction: Input should be less than 1"),
        ({"baseline_tps": -3.0}, "baseline_tps: Input should be greater than or equal to 0.01"),
        ({"name": ""}, "name: Field required"),
        ({"name": "8x H200, TP8, NVLink"}, "name: a deployment named '8x H200, TP8, NVLink' already exists"),
    ],
)
def test_invalid_profiles_write_nothing(demo, change, message):
    with reading(demo) as session:
        values = {name: getattr(pcie(session), name) for name in profiles.PROFILE_FIELDS}
        deployment_id = pcie(session).id
    with pytest.raises(ProfileError, match=message), transaction(demo) as session:
        edits.save_deployment(session, {**values, **change}, deployment_id)
    with reading(demo) as session:
        assert pcie(session).comm_fraction == 0.5


def test_new_deployment(demo):
    with transaction(demo) as session:
        deployment, summary = edits.save_deployment(
            session,
            {
                "name": "2x L40S, TP2, PCIe",
                "baseline_tps": 60.0,
                "comm_fraction": 0.3,
                "interconnect": "pcie",
            },
        )
    assert summary.benchmarks == 0
    with reading(demo) as session:
        stored = session.get(Deployment, deployment.id)
        # a cost the profile does not state stays unstated: the published prior applies
        assert (stored.tp_size, stored.comm_fraction, stored.draft_step_ms) == (None, 0.3, None)


def test_thresholds_change_what_is_an_alert(demo):
    with transaction(demo) as session:
        edits.set_deployment_threshold(session, pcie(session).id, 0.3)
    with reading(demo) as session:
        # 22 % no longer counts on PCIe: the 16-token benchmark is an alert for its depth alone
        assert "exceeds the threshold" not in session.get(Alert, 12).reason
        assert open_alert_counts(session) == {"critical": 1, "warning": 3}
        assert session.get(Alert, 4).reason.endswith("gap +2.4% is within the threshold 30%")
    with transaction(demo) as session:
        edits.set_deployment_threshold(session, pcie(session).id, None)
        edits.set_global_threshold(session, 0.5)
    with reading(demo) as session:
        assert get_gap_threshold(session) == 0.5
        assert session.get(Alert, 4).reason.endswith("gap +2.4% is within the threshold 50%")
    with pytest.raises(ProfileError, match="gap_threshold"), transaction(demo) as session:
        edits.set_global_threshold(session, 0)


def test_settings_page_saves_the_global_threshold(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    at.number_input(key="settings_threshold").set_value(25.0)
    at.button[0].click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        assert get_gap_threshold(session) == 0.25
    assert at.number_input(key="settings_threshold").value == 25.0


def test_settings_page_creates_a_deployment_and_reports_bad_values(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    at.text_input(key="profile_new_name").input("1x H100")
    at.number_input(key="profile_new_baseline_tps").set_value(150.0)
    at.number_input(key="profile_new_comm").set_value(0.0)
    create = next(b for b in at.button if b.label == "Create deployment")
    create.click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(Deployment.baseline_tps).where(Deployment.name == "1x H100")) == 150.0
    at.text_input(key="profile_new_name").input(PCIE)
    next(b for b in at.button if b.label == "Create deployment").click().run()
    assert any("already exists" in e.value for e in at.error)


def test_calibration_on_the_page_adds_a_calibrated_parameter_set(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    next(b for b in at.button if b.label == "Run calibration").click().run()
    assert not at.exception
    # PCIe: 10 speculative benchmarks, the EAGLE-flag one left out for its critical diagnosis
    assert any(
        "fitted to 9 benchmark(s), 1 left out (critical diagnosis: 1)" in unmd(m.value) for m in at.markdown
    )
    assert any("8x H200, TP8, NVLink: not calibrated" in unmd(i.value) for i in at.info)
    fitted = table_with(at, "acc_to_acceptance")
    assert fitted[""].tolist() == ["profile (prior)", "calibrated"]
    median = next(m for m in at.metric if m.label == "median error")
    assert float(median.value.rstrip("%")) < 5
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(ParameterSet).where(ParameterSet.source == "calibrated")) is None
    next(b for b in at.button if b.label == "Apply as a calibrated parameter set").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        calibrated = session.scalars(select(ParameterSet).where(ParameterSet.source == "calibrated")).one()
        sources = set(session.scalars(select(Prediction.source).where(Prediction.deployment_id == 1)))
    assert calibrated.is_active and calibrated.fit["n_benchmarks"] == 9
    assert {"theory", "calibrated"} <= sources
    sets = table_with(at, "cv_median_error")
    assert sets[sets["source"] == "calibrated"]["deployment"].tolist() == [PCIE]


def stored_profile(url: str, name: str) -> dict:
    with reading(make_engine(url)) as session:
        deployment = session.scalars(select(Deployment).where(Deployment.name == name)).one()
        return {field: getattr(deployment, field) for field in profiles.PROFILE_FIELDS}


def theory_sets(url: str, name: str) -> list[tuple[int, bool, float]]:
    with reading(make_engine(url)) as session:
        return [
            (s.version, s.is_active, s.round_overhead_ms)
            for s in session.scalars(
                select(ParameterSet)
                .join(Deployment)
                .where(Deployment.name == name, ParameterSet.source == "theory")
                .order_by(ParameterSet.version)
            )
        ]


def at_url(at) -> str:
    import os

    return os.environ["SPECDASH_DB_URL"]


def choose_profile(at, name: str):
    box = at.selectbox(key="settings_profile_choice")
    if name == "+ new deployment":
        return box.set_value(name).run()
    with reading(make_engine(at_url(at))) as session:  # options show the names; the values are ids
        return box.set_value(session.scalar(select(Deployment.id).where(Deployment.name == name))).run()


def test_editing_a_profile_shows_its_values_and_changes_only_what_was_edited(monkeypatch, demo_url):
    """The bug: fixed widget keys showed the blank new-deployment form for "edit", and saving wiped the GPU,
    TP size, interconnect, baseline and costs of the profile."""
    before = stored_profile(demo_url, PCIE)
    assert before["gpu"] == "RTX PRO 6000 Blackwell" and before["baseline_tps"] == 90.0
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    choose_profile(at, PCIE)
    assert not at.exception
    widgets = [*at.text_input, *at.number_input]
    fields = {w.key.split("_", 3)[3]: w for w in widgets if w.key.startswith("profile_")}
    # pre-filled with the stored profile, not the new-deployment defaults
    assert fields["name"].value == PCIE
    assert fields["gpu"].value == "RTX PRO 6000 Blackwell"
    assert fields["baseline_tps"].value == 90.0 and fields["comm"].value == 0.5
    assert fields["draft_ms"].value == pytest.approx(1.93 / 3)
    versions = theory_sets(demo_url, PCIE)
    fields["overhead"].set_value(12.5)
    next(b for b in at.button if b.label == "Save profile").click().run()
    assert not at.exception
    after = stored_profile(demo_url, PCIE)
    assert after == {**before, "round_overhead_ms": 12.5}  # nothing else moved, not even by rounding
    new_versions = theory_sets(demo_url, PCIE)
    assert new_versions[:-1] == [(v, False, o) for v, _, o in versions]
    assert new_versions[-1] == (versions[-1][0] + 1, True, 12.5)


def test_each_deployment_gets_its_own_form(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    choose_profile(at, PCIE)
    gpu = next(w for w in at.text_input if w.key.endswith("_gpu"))
    gpu.input("typed but not saved").run()
    choose_profile(at, NVLINK)
    assert next(w for w in at.text_input if w.key.endswith("_gpu")).value == "H200"
    assert next(w for w in at.text_input if w.key.endswith("_name")).value == NVLINK
    choose_profile(at, "+ new deployment")
    assert next(w for w in at.text_input if w.key.endswith("_name")).value == ""


def test_renaming_alone_makes_no_new_parameter_set(monkeypatch, demo_url):
    versions = theory_sets(demo_url, PCIE)
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    choose_profile(at, PCIE)
    next(w for w in at.text_input if w.key.endswith("_name")).input("PCIe box")
    next(b for b in at.button if b.label == "Save profile").click().run()
    assert not at.exception
    assert stored_profile(demo_url, "PCIe box")["comm_fraction"] == 0.5
    assert theory_sets(demo_url, "PCIe box") == versions


def test_an_earlier_parameter_set_can_be_restored(monkeypatch, demo_url):
    engine = make_engine(demo_url)
    with reading(engine) as session:
        values = profiles.profile_values(session, pcie(session).id)
        story_before = session.get(Gap, 1).predicted_tps
    with transaction(engine) as session:
        edits.edit_deployment(session, pcie(session).id, values, {**values, "round_overhead_ms": 12.5})
    with reading(engine) as session:
        assert session.get(Gap, 1).predicted_tps < 100  # 1000 * 2.1 / 25.5 ms
    first = theory_sets(demo_url, PCIE)[-2][0]  # the version active before the edit
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    at.selectbox(key="settings_sets_deployment").select(PCIE).run()
    restore = at.selectbox(key="settings_restore_choice")
    assert any(f"{PCIE}: v{first} (theory" in o for o in restore.options)
    with reading(engine) as session:
        first_id = session.scalar(
            select(ParameterSet.id).where(
                ParameterSet.deployment_id == pcie(session).id, ParameterSet.version == first
            )
        )
    restore.set_value(first_id).run()
    next(b for b in at.button if b.label == "Restore this version").click().run()
    assert not at.exception
    sets = theory_sets(demo_url, PCIE)
    assert [s[1:] for s in sets[-3:]] == [(False, 0.0), (False, 12.5), (True, 0.0)]
    assert stored_profile(demo_url, PCIE)["round_overhead_ms"] == 0.0
    with reading(engine) as session:
        assert session.get(Gap, 1).predicted_tps == pytest.approx(story_before)
        assert session.scalars(
            select(ParameterSet.note).where(ParameterSet.version == sets[-1][0])
        ).first() == (f"restored from v{first}")
    # the form follows the restored profile
    choose_profile(at, PCIE)
    assert next(w for w in at.number_input if w.key.endswith("_overhead")).value == 0.0


def test_applied_fits_are_not_offered_again(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url, "views/settings.py")
    next(b for b in at.button if b.label == "Run calibration").click().run()
    next(b for b in at.button if b.label == "Apply as a calibrated parameter set").click().run()
    next(b for b in at.button if b.label == "Run calibration").click().run()
    assert not at.exception
    assert not [b for b in at.button if b.label == "Apply as a calibrated parameter set"]
    assert any(
        s.value.startswith("Applied: this fit is the active calibrated parameter set v") for s in at.success
    )
