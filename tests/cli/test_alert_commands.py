"""`specdash alerts` and `specdash alert ID`: the dashboard's alerts, with its ids, from the command line."""

import json

from sqlalchemy import select

from specdash.db.engine import make_engine, reading
from specdash.db.models import Alert, AlertEvent, AlertMute


def test_alerts_lists_one_per_benchmark_with_the_dashboards_ids(invoke, demo_url):
    result = invoke(demo_url, "alerts", "--format", "json")
    assert result.exit_code == 0
    rows = json.loads(result.output)
    assert [(r["alert_id"], r["severity"], r["code"]) for r in rows] == [
        (3, "critical", "algorithm_mismatch"),
        (12, "warning", "beyond_trained_depth"),
        (11, "warning", "beyond_trained_depth"),
        (15, "warning", "beyond_trained_depth"),
    ]
    table = invoke(demo_url, "alerts").output.splitlines()
    assert table[0].split()[:3] == ["id", "severity", "gap"]
    assert table[1].split()[:3] == ["3", "critical", "+48.9%"]


def test_alerts_grouped_and_quiet(invoke, demo_url):
    grouped = json.loads(invoke(demo_url, "alerts", "--group-by", "deployment", "--format", "json").output)
    assert {g["group"]: g["alerts"] for g in grouped} == {
        "8x RTX PRO 6000, TP8, PCIe": 3,
        "8x H200, TP8, NVLink": 1,
    }
    quiet = json.loads(invoke(demo_url, "alerts", "--show", "quiet", "--format", "json").output)
    assert len(quiet) == 9 and not any(r["is_alert"] for r in quiet)
    assert all("is within the threshold" in r["reason"] for r in quiet)


def test_alert_status_change_is_the_pages(invoke, demo_url):
    result = invoke(
        demo_url, "alert", "3", "--status", "explained", "--note", "served with EAGLE", "--who", "ana"
    )
    assert result.exit_code == 0, result.output
    assert "critical alert, status explained" in result.output
    assert "ana: open -> explained (served with EAGLE)" in result.output
    with reading(make_engine(demo_url)) as session:
        alert = session.get(Alert, 3)
        event = session.scalars(select(AlertEvent)).one()
    assert (alert.status, alert.note) == ("explained", "served with EAGLE")
    assert (event.benchmark_id, event.who) == (3, "ana")
    still_open = invoke(demo_url, "check").output
    assert "3 open alert(s)" in still_open and "k25-eagle3-10k" not in still_open  # #3 is no longer open


def test_alert_mute_from_the_cli(invoke, demo_url):
    result = invoke(demo_url, "alert", "12", "--mute", "TTT-5 on purpose", "--who", "ben")
    assert result.exit_code == 0 and "(muted)" in result.output
    with reading(make_engine(demo_url)) as session:
        mute = session.scalars(select(AlertMute)).one()
    assert (mute.diagnosis, mute.reason, mute.who) == ("beyond_trained_depth", "TTT-5 on purpose", "ben")
    # both PCIe depth alerts are muted; the NVLink one and the EAGLE-flag one are not
    rows = json.loads(invoke(demo_url, "alerts", "--format", "json").output)
    assert [r["alert_id"] for r in rows] == [3, 15]


def test_alert_errors(invoke, demo_url):
    unknown = invoke(demo_url, "alert", "999", "--status", "open")
    assert unknown.exit_code == 1 and "no alert with id 999" in unknown.output
    same = invoke(demo_url, "alert", "3", "--status", "open", "--who", "ana")
    assert same.exit_code == 1 and "alert #3 is already open; add a note" in same.output
    bad = invoke(demo_url, "alert", "3", "--status", "closed")
    assert bad.exit_code == 2


def test_check_counts_open_alerts_and_a_threshold_keeps_invalid_ones(invoke, demo_url):
    result = invoke(demo_url, "check")
    assert result.exit_code == 1 and "4 open alert(s)" in result.output
    # every demo alert is an invalid or out-of-range benchmark: each counts whatever the --threshold
    high = invoke(demo_url, "check", "--threshold", "0.5")
    assert high.exit_code == 1 and "4 open alert(s)" in high.output
