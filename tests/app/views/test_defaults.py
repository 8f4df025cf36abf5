"""Defaults that agree with the verdicts: the parity chart opens on the prediction that judges the alerts
(calibrated once a calibration is applied), and info-level alerts are grouped out of the way, one click
away, on the Overview and the Alerts page."""

from sqlalchemy import func, select

from specdash.answers.calibrate import calibrate
from specdash.answers.refresh import refresh
from specdash.db.calibration import apply_calibration
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Alert
from tests.app_support import run_page


def open_info_alerts(url: str) -> int:
    with reading(make_engine(url)) as session:
        query = select(func.count()).where(
            Alert.status == "open", Alert.is_alert.is_(True), Alert.severity == "info"
        )
        return int(session.scalar(query) or 0)


def test_parity_opens_on_theory_then_on_calibrated_once_applied(monkeypatch, demo_url):
    at = run_page(monkeypatch, demo_url)
    assert at.selectbox(key="overview_source").value == "theory"
    with transaction(make_engine(demo_url)) as session:
        (report,) = calibrate(session)
        apply_calibration(session, report)
        refresh(session)
    at = run_page(monkeypatch, demo_url)
    assert at.selectbox(key="overview_source").value == "calibrated"
    assert "source" not in at.query_params  # the default is not written into the URL


def test_info_alerts_are_grouped_on_the_overview(monkeypatch, real_url):
    info = open_info_alerts(real_url)
    assert info > 0  # published results nothing predicts the acceptance of
    at = run_page(monkeypatch, real_url)
    assert not at.exception
    cards = [*at.error, *at.warning, *at.info]
    assert not any(c.proto.icon == ":material/info:" for c in cards)  # no info-level card
    [group] = [e for e in at.expander if e.label.startswith(f"{info} info-level alert")]
    assert group.proto.expanded is False


def test_the_alerts_page_lists_the_others_first_and_shows_info_on_one_click(monkeypatch, real_url):
    info = open_info_alerts(real_url)
    at = run_page(monkeypatch, real_url, "views/alerts.py")
    assert at.multiselect(key="alerts_severity").value == ["critical", "warning", "none"]
    first = next(d.value for d in at.dataframe if "severity" in d.value.columns)
    assert "info" not in set(first["severity"])
    at.button(key="alerts_show_info").click().run()
    assert "info" in at.multiselect(key="alerts_severity").value
    table = next(d.value for d in at.dataframe if "severity" in d.value.columns)
    # the most severe first, then the info-level ones up to the page's 50 rows
    assert table["severity"].tolist()[: len(first)] == first["severity"].tolist()
    assert (table["severity"] == "info").sum() == min(info, 50 - len(first))
