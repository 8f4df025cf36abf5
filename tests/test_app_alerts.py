"""The alert investigation workflow: filters and pages, status changes with history, superseding reruns; in
db/alerts.py and through the Alerts page."""

import pytest
from sqlalchemy import select

from specdash.app.text import unmd
from specdash.db import alerts
from specdash.db.alerts import AlertChangeError, AlertFilters
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.models import Benchmark, Gap, GapEvent
from tests.test_app import run_page, table_with

STORY_GAP = 1  # the EAGLE-flag benchmark (#3) against theory
STORY_BENCHMARK, RERUN_BENCHMARK = 3, 4


@pytest.fixture
def demo(demo_url):
    engine = make_engine(demo_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize(
    "filters,expected",
    [
        (AlertFilters(), [1, 13]),
        (AlertFilters(severities=("critical",)), [1]),
        (AlertFilters(diagnosis="beyond_trained_depth"), [13]),
        (AlertFilters(run="k25-eagle3-10k"), [1]),
        (AlertFilters(deployment="8x H200, TP8, NVLink"), []),
        (AlertFilters(source="roofline-sim"), []),
        (AlertFilters(statuses=("resolved",)), []),
        (AlertFilters(threshold=0.05, statuses=()), [1, 13, 12, 11, 16]),
    ],
)
def test_alert_filters(demo, filters, expected):
    with reading(demo) as session:
        rows, total = alerts.alert_page(session, filters)
    assert [r["gap_id"] for r in rows] == expected
    assert total == len(expected)


def test_alert_pages_split_the_list(demo):
    with reading(demo) as session:
        first, total = alerts.alert_page(session, AlertFilters(threshold=0.0, statuses=()), 0, 10)
        second, _ = alerts.alert_page(session, AlertFilters(threshold=0.0, statuses=()), 10, 10)
    assert total == 16 and len(first) == 10 and len(second) == 6
    assert not {r["gap_id"] for r in first} & {r["gap_id"] for r in second}
    assert abs(first[-1]["gap"]) >= abs(second[0]["gap"])


def test_status_change_is_recorded_with_who_and_note(demo):
    with transaction(demo) as session:
        alerts.change_status(session, STORY_GAP, "investigating", "ana", "checking the server flags")
        alerts.change_status(session, STORY_GAP, "explained", " ana ", "served with EAGLE, not EAGLE3")
        alerts.change_status(session, STORY_GAP, "explained", "ben", "confirmed in the launch script")
    with reading(demo) as session:
        gap = session.get(Gap, STORY_GAP)
        history = alerts.alert_history(session, STORY_GAP)
        open_rows, _ = alerts.alert_page(session, AlertFilters(statuses=("open",)))
    assert gap.status == "explained" and gap.note == "confirmed in the launch script"
    assert history[["who", "from_status", "to_status"]].values.tolist() == [
        ["ana", "open", "investigating"],
        ["ana", "investigating", "explained"],
        ["ben", "explained", "explained"],
    ]
    assert history["at"].is_monotonic_increasing
    assert [r["gap_id"] for r in open_rows] == [13]


@pytest.mark.parametrize(
    "status,who,note,message",
    [
        ("closed", "ana", None, "status must be one of open, investigating, explained, resolved, dismissed"),
        ("explained", "  ", None, "say who you are"),
        ("open", "ana", "", "the alert is already open; add a note"),
    ],
)
def test_invalid_status_changes_write_nothing(demo, status, who, note, message):
    with pytest.raises(AlertChangeError, match=message), transaction(demo) as session:
        alerts.change_status(session, STORY_GAP, status, who, note)
    with reading(demo) as session:
        assert session.scalar(select(GapEvent.id)) is None
        assert session.get(Gap, STORY_GAP).status == "open"


def test_rerun_supersedes_the_invalid_benchmark(demo):
    with reading(demo) as session:
        candidates = alerts.supersede_candidates(session, STORY_BENCHMARK)
    assert candidates["benchmark_id"].tolist() == [RERUN_BENCHMARK]
    with transaction(demo) as session:
        events = alerts.link_superseding(session, STORY_BENCHMARK, RERUN_BENCHMARK, "ana", "wrong flag")
    assert len(events) == 1
    with reading(demo) as session:
        assert session.get(Benchmark, STORY_BENCHMARK).superseded_by_id == RERUN_BENCHMARK
        detail = alerts.alert_detail(session, STORY_GAP)
        rerun_detail = alerts.alert_detail(session, 2)
        assert alerts.supersede_candidates(session, RERUN_BENCHMARK).empty
    assert detail["status"] == "resolved" and detail["superseded_by_id"] == RERUN_BENCHMARK
    assert (
        detail["note"]
        == "superseded by benchmark 4 (demo: rerun with --speculative-algorithm EAGLE3): wrong flag"
    )
    assert rerun_detail["supersedes"] == [STORY_BENCHMARK]


@pytest.mark.parametrize(
    "old,new,message",
    [
        (3, 3, "cannot supersede itself"),
        (3, 12, "measured another checkpoint"),
        (3, 999, "no benchmark with id 999"),
    ],
)
def test_impossible_supersede_links_are_refused(demo, old, new, message):
    with pytest.raises(AlertChangeError, match=message), transaction(demo) as session:
        alerts.link_superseding(session, old, new, "ana")
    with reading(demo) as session:
        assert session.get(Benchmark, old).superseded_by_id is None


def test_alert_detail_holds_the_decomposition(demo):
    with reading(demo) as session:
        detail = alerts.alert_detail(session, STORY_GAP)
        assert alerts.alert_detail(session, 999) is None
    assert detail["is_alert"] and detail["severity"] == "critical"
    assert detail["measured_round_ms"] == pytest.approx(25.5, abs=0.05)
    assert detail["compute_ms"] + detail["comm_ms"] + detail["draft_ms"] == pytest.approx(13.04, abs=0.01)
    assert detail["drafter_path"] == "/ckpt/k25-eagle3-10k/epoch_3" and detail["draft_hidden_size"] == 7168


# --- through the page ------------------------------------------------------------------------------------
def alerts_page(monkeypatch, url, alert_id=None):
    return run_page(monkeypatch, url, "views/alerts.py", query={"alert": str(alert_id)} if alert_id else None)


def test_alerts_page_lists_alerts_and_opens_the_largest(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url)
    assert not at.exception
    table = at.dataframe[0].value
    assert table["id"].tolist() == [1, 13]
    assert unmd(at.subheader[0].value) == "Alert #1: k25-eagle3-10k / epoch_3"
    codes = [unmd(e.value).split(":")[0] for e in at.error]
    assert codes == ["**algorithm_mismatch**", "**hidden_size_mismatch**"]


def test_alert_link_opens_that_alert(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, 13)
    assert unmd(at.subheader[0].value) == "Alert #13: k25-eagle3-100k-ttt5 / epoch_5"
    assert any("trained 5 deep" in unmd(w.value) for w in at.warning)


def test_status_change_on_the_page_persists(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, STORY_GAP)
    at.text_input(key="alerts_who").input("ana")
    at.selectbox(key="alerts_new_status").select("explained")
    at.text_area(key="alerts_note").input("server started with EAGLE instead of EAGLE3")
    at.button[0].click().run()
    assert not at.exception and not at.error[2:]
    with reading(make_engine(demo_url)) as session:
        gap = session.get(Gap, STORY_GAP)
        event = session.scalars(select(GapEvent)).one()
    assert gap.status == "explained" and gap.note == "server started with EAGLE instead of EAGLE3"
    assert (event.who, event.from_status, event.to_status) == ("ana", "open", "explained")
    # the page shows it after the rerun, and the default filter no longer lists it
    assert table_with(at, "to_status")["to_status"].tolist() == ["explained"]
    fresh = alerts_page(monkeypatch, demo_url)
    assert fresh.dataframe[0].value["id"].tolist() == [13]


def test_status_change_without_a_name_is_refused_on_the_page(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, STORY_GAP)
    at.selectbox(key="alerts_new_status").select("dismissed")
    at.button[0].click().run()
    assert any("say who you are" in e.value for e in at.error)
    with reading(make_engine(demo_url)) as session:
        assert session.get(Gap, STORY_GAP).status == "open"


def test_rerun_link_on_the_page(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, STORY_GAP)
    at.text_input(key="alerts_who").input("ana")
    at.selectbox(key="alerts_rerun").select(RERUN_BENCHMARK)
    at.button[1].click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        assert session.get(Benchmark, STORY_BENCHMARK).superseded_by_id == RERUN_BENCHMARK
        assert session.get(Gap, STORY_GAP).status == "resolved"
    assert any("superseded by benchmark #4" in i.value for i in at.info)


def test_link_to_an_unknown_alert_says_so(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, 999)
    assert not at.exception
    assert at.error[0].value == "No alert with id 999."
