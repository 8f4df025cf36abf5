"""The alert investigation workflow: one alert per benchmark, filters, pages and groups, status changes with
history (one at a time and by group), muted diagnoses, superseding reruns; in db/alerts.py and through the
Alerts page."""

import pytest
from sqlalchemy import select

from specdash.app.frames import frame
from specdash.app.text import unmd
from specdash.db import alerts
from specdash.db.alert_rows import AlertGroup, MutedDiagnosis, RerunCandidate, SourceGap
from specdash.db.alerts import AlertChangeError, AlertFilters
from specdash.db.engine import make_engine, reading, transaction
from specdash.db.investigation import StatusChange
from specdash.db.models import Alert, AlertEvent, Benchmark
from tests.app_support import run_page, table_with

# Alert ids are benchmark ids. The demo's alerts: the EAGLE-flag benchmark (#3, critical), the 16-token one
# (#12, 15 steps on a drafter trained 5 deep) and the two 7-step ones (#11 on PCIe, judged by the external
# roofline-sim prediction; #15 on NVLink, by theory): depth beyond training alerts whatever the gap.
STORY, DEEP = 3, 12
STORY_BENCHMARK, RERUN_BENCHMARK = 3, 4


@pytest.fixture
def demo(demo_url):
    engine = make_engine(demo_url)
    yield engine
    engine.dispose()


@pytest.mark.parametrize(
    "filters,expected",
    [
        (AlertFilters(), [3, 12, 11, 15]),
        (AlertFilters(severities=("critical",)), [3]),
        (AlertFilters(diagnosis="beyond_trained_depth"), [12, 11, 15]),
        (AlertFilters(run="k25-eagle3-10k"), [3]),
        (AlertFilters(deployment="8x H200, TP8, NVLink"), [15]),
        (AlertFilters(source="roofline-sim"), [11]),
        (AlertFilters(statuses=("resolved",)), []),
        (AlertFilters(raised=False, source="roofline-sim"), [9, 10]),
    ],
)
def test_alert_filters(demo, filters, expected):
    with reading(demo) as session:
        rows, total = alerts.alert_page(session, filters)
    assert [r["alert_id"] for r in rows] == expected
    assert total == len(expected)


def test_one_alert_per_benchmark_against_the_best_prediction(demo):
    with reading(demo) as session:
        rows, total = alerts.alert_page(session, AlertFilters(raised=None, statuses=()), 0, 100)
    # 13 speculative benchmarks with a checkpoint, 3 of them with an external prediction as well
    assert total == 13 and len({r["benchmark_id"] for r in rows}) == 13
    assert {r["alert_id"]: r["source"] for r in rows if r["source"] != "theory"} == {
        9: "roofline-sim",
        10: "roofline-sim",
        11: "roofline-sim",
    }


def test_alert_pages_split_the_list(demo):
    every = AlertFilters(raised=None, statuses=())
    with reading(demo) as session:
        first, total = alerts.alert_page(session, every, 0, 10)
        second, _ = alerts.alert_page(session, every, 10, 10)
    assert total == 13 and len(first) == 10 and len(second) == 3
    assert not {r["alert_id"] for r in first} & {r["alert_id"] for r in second}


def test_status_change_is_recorded_with_who_and_note(demo):
    with transaction(demo) as session:
        alerts.change_status(session, STORY, "investigating", "ana", "checking the server flags")
        alerts.change_status(session, STORY, "explained", " ana ", "served with EAGLE, not EAGLE3")
        alerts.change_status(session, STORY, "explained", "ben", "confirmed in the launch script")
    with reading(demo) as session:
        alert = session.get(Alert, STORY)
        history = frame(alerts.alert_history(session, STORY), StatusChange)
        open_rows, _ = alerts.alert_page(session, AlertFilters(statuses=("open",)))
    assert alert.status == "explained" and alert.note == "confirmed in the launch script"
    assert history[["who", "from_status", "to_status"]].values.tolist() == [
        ["ana", "open", "investigating"],
        ["ana", "investigating", "explained"],
        ["ben", "explained", "explained"],
    ]
    assert history["at"].is_monotonic_increasing
    assert [r["alert_id"] for r in open_rows] == [12, 11, 15]


@pytest.mark.parametrize(
    "status,who,note,message",
    [
        ("closed", "ana", None, "status must be one of open, investigating, explained, resolved, dismissed"),
        ("explained", "  ", None, "say who you are"),
        ("open", "ana", "", "alert #3 is already open; add a note"),
    ],
)
def test_invalid_status_changes_write_nothing(demo, status, who, note, message):
    with pytest.raises(AlertChangeError, match=message), transaction(demo) as session:
        alerts.change_status(session, STORY, status, who, note)
    with reading(demo) as session:
        assert session.scalar(select(AlertEvent.id)) is None
        assert session.get(Alert, STORY).status == "open"


def test_groups_and_a_group_status_change(demo):
    with reading(demo) as session:
        by_diagnosis = frame(alerts.alert_groups(session, AlertFilters(), "diagnosis"), AlertGroup)
        by_run = frame(alerts.alert_groups(session, AlertFilters(), "run"), AlertGroup)
    assert by_diagnosis.values.tolist() == [
        ["beyond_trained_depth", 3, 0, 3, 0],
        ["algorithm_mismatch", 1, 1, 0, 0],
    ]
    assert dict(zip(by_run["group"], by_run["alerts"], strict=True)) == {
        "k25-eagle3-100k-ttt5": 3,
        "k25-eagle3-10k": 1,
    }
    with transaction(demo) as session:
        events = alerts.change_group(
            session,
            AlertFilters(diagnosis="beyond_trained_depth"),
            "explained",
            "ana",
            "trained 5 deep; deeper run scheduled",
        )
    assert len(events) == 3
    with reading(demo) as session:
        assert {
            a.benchmark_id: a.status for a in session.scalars(select(Alert).where(Alert.status != "open"))
        } == {11: "explained", 12: "explained", 15: "explained"}
        assert session.scalar(select(AlertEvent.note).where(AlertEvent.benchmark_id == 12)) == (
            "trained 5 deep; deeper run scheduled"
        )


def test_muting_a_diagnosis_on_a_deployment_hides_its_alerts_until_lifted(demo):
    pcie = "8x RTX PRO 6000, TP8, PCIe"
    with pytest.raises(AlertChangeError, match="say why"), transaction(demo) as session:
        alerts.mute_diagnosis(session, pcie, "beyond_trained_depth", " ", "ana")
    with transaction(demo) as session:
        mute = alerts.mute_diagnosis(session, pcie, "beyond_trained_depth", "known: TTT 5 drafter", "ana")
    with reading(demo) as session:
        rows, _ = alerts.alert_page(session, AlertFilters())
        muted, _ = alerts.alert_page(session, AlertFilters(muted=True))
        mutes = frame(alerts.mutes(session), MutedDiagnosis)
        detail = alerts.alert_detail(session, DEEP)
    assert [r["alert_id"] for r in rows] == [3, 15]  # #15 is on NVLink: not muted there
    assert {r["alert_id"] for r in muted} == {11, 12}
    assert mutes[["deployment", "diagnosis", "reason", "who", "alerts"]].values.tolist() == [
        [pcie, "beyond_trained_depth", "known: TTT 5 drafter", "ana", 2]
    ]
    assert detail["mute"]["reason"] == "known: TTT 5 drafter"
    with pytest.raises(AlertChangeError, match="already muted"), transaction(demo) as session:
        alerts.mute_diagnosis(session, pcie, "beyond_trained_depth", "again", "ana")
    with transaction(demo) as session:
        alerts.lift_mute(session, mute.id, "ben")
    with reading(demo) as session:
        assert [r["alert_id"] for r in alerts.alert_page(session, AlertFilters())[0]] == [3, 12, 11, 15]
        assert frame(alerts.mutes(session), MutedDiagnosis).empty
        assert frame(alerts.mutes(session, active_only=False), MutedDiagnosis)["lifted_by"].tolist() == [
            "ben"
        ]


def test_rerun_supersedes_the_invalid_benchmark(demo):
    with reading(demo) as session:
        candidates = frame(alerts.supersede_candidates(session, STORY_BENCHMARK), RerunCandidate)
    assert candidates["benchmark_id"].tolist() == [RERUN_BENCHMARK]
    with transaction(demo) as session:
        events = alerts.link_superseding(session, STORY_BENCHMARK, RERUN_BENCHMARK, "ana", "wrong flag")
    assert len(events) == 1  # one investigation, whatever the number of prediction sources
    with reading(demo) as session:
        assert session.get(Benchmark, STORY_BENCHMARK).superseded_by_id == RERUN_BENCHMARK
        detail = alerts.alert_detail(session, STORY)
        rerun_detail = alerts.alert_detail(session, RERUN_BENCHMARK)
        assert frame(alerts.supersede_candidates(session, RERUN_BENCHMARK), RerunCandidate).empty
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


def test_alert_detail_holds_the_decomposition_and_every_source(demo):
    with reading(demo) as session:
        detail = alerts.alert_detail(session, STORY)
        external = alerts.alert_detail(session, 11)
        assert alerts.alert_detail(session, 999) is None
    assert detail["is_alert"] and detail["severity"] == "critical"
    assert detail["reason"].startswith("against the theory prediction: algorithm_mismatch")
    assert detail["measured_round_ms"] == pytest.approx(25.5, abs=0.05)
    assert detail["compute_ms"] + detail["comm_ms"] + detail["draft_ms"] == pytest.approx(13.04, abs=0.01)
    assert detail["drafter_path"] == "/ckpt/k25-eagle3-10k/epoch_3" and detail["draft_hidden_size"] == 7168
    # the 7-step benchmark has both a theory and an external prediction; the external one judges it
    analysis = frame(external["analysis"], SourceGap).set_index("source")
    assert set(analysis.index) == {"roofline-sim", "theory"}
    assert analysis["verdict"].to_dict() == {"roofline-sim": True, "theory": False}


# --- through the page ------------------------------------------------------------------------------------
def alerts_page(monkeypatch, url, alert_id=None):
    return run_page(monkeypatch, url, "views/alerts.py", query={"alert": str(alert_id)} if alert_id else None)


def test_alerts_page_lists_alerts_and_opens_the_most_severe(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url)
    assert not at.exception
    table = at.dataframe[0].value
    assert table["id"].tolist() == [3, 12, 11, 15]
    assert unmd(at.subheader[0].value) == "Alert #3: k25-eagle3-10k / epoch_3"
    codes = [unmd(e.value).split(":")[0] for e in at.error]
    assert codes == ["**algorithm_mismatch**", "**hidden_size_mismatch**"]
    # the lead line in plain words; the verdict's reasoning in the expander under it
    assert any(
        unmd(m.value).startswith("#### Measured 49 % slower than the first-principles prediction")
        for m in at.markdown
    )
    assert any(
        unmd(c.value).startswith("Verdict: against the theory prediction: algorithm_mismatch")
        for c in at.caption
    )


def test_alert_link_opens_that_alert(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, DEEP)
    assert unmd(at.subheader[0].value) == "Alert #12: k25-eagle3-100k-ttt5 / epoch_5"
    assert any("trained 5 deep" in unmd(w.value) for w in at.warning)


def test_status_change_on_the_page_persists(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, STORY)
    at.text_input(key="alerts_who").input("ana")
    at.selectbox(key=f"alerts_new_status_{STORY}").select("explained")
    at.text_area(key=f"alerts_note_{STORY}").input("server started with EAGLE instead of EAGLE3")
    next(b for b in at.button if b.label == "Save status").click().run()
    assert not at.exception and not at.error[2:]
    with reading(make_engine(demo_url)) as session:
        alert = session.get(Alert, STORY)
        event = session.scalars(select(AlertEvent)).one()
    assert alert.status == "explained" and alert.note == "server started with EAGLE instead of EAGLE3"
    assert (event.who, event.from_status, event.to_status) == ("ana", "open", "explained")
    assert table_with(at, "to_status")["to_status"].tolist() == ["explained"]
    fresh = alerts_page(monkeypatch, demo_url)
    assert fresh.dataframe[0].value["id"].tolist() == [12, 11, 15]


def test_a_form_belongs_to_its_alert(monkeypatch, demo_url):
    """Edit alert #3's form without saving, open #12, save there: #12 gets its own edits, #3 keeps its own."""
    at = alerts_page(monkeypatch, demo_url, STORY)
    at.text_input(key="alerts_who").input("ana")
    at.selectbox(key=f"alerts_new_status_{STORY}").select("dismissed")
    at.text_area(key=f"alerts_note_{STORY}").input("half-typed note for #3")
    at.query_params["alert"] = str(DEEP)
    at.run()
    assert unmd(at.subheader[0].value) == "Alert #12: k25-eagle3-100k-ttt5 / epoch_5"
    # #12's form starts from #12's own state, not from what was typed for #3
    assert at.selectbox(key=f"alerts_new_status_{DEEP}").value == "open"
    assert at.text_area(key=f"alerts_note_{DEEP}").value == ""
    at.selectbox(key=f"alerts_new_status_{DEEP}").select("investigating")
    at.text_area(key=f"alerts_note_{DEEP}").input("retraining 16 deep")
    next(b for b in at.button if b.label == "Save status").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        story, deep = session.get(Alert, STORY), session.get(Alert, DEEP)
        events = session.execute(select(AlertEvent.benchmark_id, AlertEvent.to_status, AlertEvent.note)).all()
    assert (deep.status, deep.note) == ("investigating", "retraining 16 deep")
    assert (story.status, story.note) == ("open", None)
    assert [tuple(e) for e in events] == [(DEEP, "investigating", "retraining 16 deep")]


def test_status_change_without_a_name_is_refused_on_the_page(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, STORY)
    at.selectbox(key=f"alerts_new_status_{STORY}").select("dismissed")
    next(b for b in at.button if b.label == "Save status").click().run()
    assert any("say who you are" in e.value for e in at.error)
    with reading(make_engine(demo_url)) as session:
        assert session.get(Alert, STORY).status == "open"


def test_rerun_link_on_the_page(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, STORY)
    at.text_input(key="alerts_who").input("ana")
    at.selectbox(key=f"alerts_rerun_{STORY}").select(RERUN_BENCHMARK)
    next(b for b in at.button if b.label == "Link rerun and resolve").click().run()
    assert not at.exception
    with reading(make_engine(demo_url)) as session:
        assert session.get(Benchmark, STORY_BENCHMARK).superseded_by_id == RERUN_BENCHMARK
        assert session.get(Alert, STORY).status == "resolved"
    assert any("superseded by benchmark #4" in i.value for i in at.info)


def test_the_page_shows_what_another_process_writes(monkeypatch, demo_url):
    """Liveness: a status change made outside the app (the CLI, another browser) shows on the next rerun,
    which the page's store watcher triggers every few seconds; no server restart, no cache to clear."""
    at = alerts_page(monkeypatch, demo_url)
    assert at.dataframe[0].value["id"].tolist() == [3, 12, 11, 15]
    with transaction(make_engine(demo_url)) as session:
        alerts.change_status(session, DEEP, "explained", "cli", "known")
    at.run()
    assert at.dataframe[0].value["id"].tolist() == [3, 11, 15]


def test_link_to_an_unknown_alert_says_so(monkeypatch, demo_url):
    at = alerts_page(monkeypatch, demo_url, 999)
    assert not at.exception
    assert at.error[0].value == "No alert with id 999."


def test_pages_of_alerts_cross_severities_in_order(demo):
    # the open alerts, most severe first then largest gap: #3 (critical), then the warnings #12, #11, #15
    with reading(demo) as session:
        pages = [alerts.alert_page(session, AlertFilters(), offset, 2)[0] for offset in (0, 2, 1, 4)]
        count = alerts.alert_page(session, AlertFilters(), 1, 2)[1]
    assert [[r["alert_id"] for r in rows] for rows in pages] == [[3, 12], [11, 15], [12, 11], []]
    assert count == 4


@pytest.mark.parametrize("store", ["demo_url", "real_url"])
def test_the_filters_choices_are_the_values_of_the_verdicts(request, store):
    """Each choice found from its own side (runs and deployments with a verdict, sources judging one) is
    what listing every verdict with its joins gave; a run without a benchmark is no choice."""
    from sqlalchemy import insert

    from specdash.db.gap_joins import with_verdict_joins
    from specdash.db.models import Deployment, Prediction, Run

    engine = make_engine(request.getfixturevalue(store))
    with transaction(engine) as session:  # nothing benchmarked: no verdict names them
        session.execute(insert(Run), [{"name": "never-benchmarked"}])
        session.execute(insert(Deployment), [{"name": "never-used"}])
    with reading(engine) as session:
        every = session.execute(
            with_verdict_joins(select(Prediction.source, Deployment.name, Run.name)).distinct()
        ).all()
        choices = alerts.alert_choices(session)
    engine.dispose()
    expected = [sorted({row[i] for row in every if row[i] is not None}) for i in range(3)]
    assert [choices["source"], choices["deployment"], choices["run"]] == expected
    assert len(choices["source"]) >= 2 and len(choices["run"]) >= 2
    assert "never-benchmarked" not in choices["run"] and "never-used" not in choices["deployment"]
