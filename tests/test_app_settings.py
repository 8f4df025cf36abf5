"""Settings: thresholds and deployment profiles, in db/profiles.py and through the Settings page."""

import pytest
from sqlalchemy import select

from specdash.app.text import unmd
from specdash.db import profiles
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert, Deployment, Gap, ParameterSet, Prediction
from specdash.db.profiles import ProfileError
from specdash.db.queries import open_alert_counts
from specdash.db.settings import get_gap_threshold
from tests.test_app import run_page, table_with

PCIE = "8x RTX PRO 6000, TP8, PCIe"


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
        deployment, summary = profiles.save_deployment(
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
        ({"baseline_tps": -3.0}, "baseline_tps: Input should be greater than 0"),
        ({"name": ""}, "name: Field required"),
        ({"name": "8x H200, TP8, NVLink"}, "name: a deployment named '8x H200, TP8, NVLink' already exists"),
    ],
)
def test_invalid_profiles_write_nothing(demo, change, message):
    with reading(demo) as session:
        values = {name: getattr(pcie(session), name) for name in profiles.PROFILE_FIELDS}
        deployment_id = pcie(session).id
    with pytest.raises(ProfileError, match=message), transaction(demo) as session:
        profiles.save_deployment(session, {**values, **change}, deployment_id)
    with reading(demo) as session:
        assert pcie(session).comm_fraction == 0.5


def test_new_deployment(demo):
    with transaction(demo) as session:
        deployment, summary = profiles.save_deployment(
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
        assert (stored.tp_size, stored.comm_fraction, stored.draft_step_ms) == (None, 0.3, 0.0)


def test_thresholds_change_what_is_an_alert(demo):
    with transaction(demo) as session:
        profiles.set_deployment_threshold(session, pcie(session).id, 0.3)
    with reading(demo) as session:
        # 22 % no longer counts on PCIe: the 16-token benchmark is an alert for its depth alone
        assert "exceeds the threshold" not in session.get(Alert, 12).reason
        assert open_alert_counts(session) == {"critical": 1, "warning": 3}
        assert session.get(Alert, 4).reason.endswith("gap +2.4% is within the threshold 30%")
    with transaction(demo) as session:
        profiles.set_deployment_threshold(session, pcie(session).id, None)
        profiles.set_global_threshold(session, 0.5)
    with reading(demo) as session:
        assert get_gap_threshold(session) == 0.5
        assert session.get(Alert, 4).reason.endswith("gap +2.4% is within the threshold 50%")
    with pytest.raises(ProfileError, match="gap_threshold"), transaction(demo) as session:
        profiles.set_global_threshold(session, 0)


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
    at.text_input(key="profile_name").input("1x H100")
    at.number_input(key="profile_baseline_tps").set_value(150.0)
    at.number_input(key="profile_comm").set_value(0.0)
    create = next(b for b in at.button if b.label == "Create deployment")
    create.click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        assert session.scalar(select(Deployment.baseline_tps).where(Deployment.name == "1x H100")) == 150.0
    at.text_input(key="profile_name").input(PCIE)
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
