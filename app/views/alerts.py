"""Alerts: one verdict per benchmark (its id is the benchmark's), judged against the best prediction that
covers it; filtered, paged and grouped for triage (a group's status at once, a diagnosis muted on a
deployment); one alert in full (why it is or is not an alert, diagnoses, the waterfall, every source's gap)
with its investigation: status, note, who/when history, and the benchmark that supersedes an invalid one.
`?alert=ID` opens an alert."""

import pandas as pd
import streamlit as st

from specdash.answers.edits import supersede
from specdash.answers.verdicts import VERDICT_ORDER
from specdash.app import identity, state, tables, urlstate
from specdash.app.alert_charts import waterfall_figure
from specdash.app.alert_text import GAP_CONVENTION, benchmark_facts, lead_line
from specdash.app.text import SEVERITY_ICONS, md
from specdash.costmodel.domain import ACTIVE_STATUSES
from specdash.db import alerts
from specdash.db.alerts import DIAGNOSIS_CODES, GROUPINGS, SEVERITIES, AlertChangeError, AlertFilters
from specdash.db.models import GAP_STATUSES
from specdash.labels import gap_text, setting_label

PAGE_ROWS = 50
ANY = "any"
# What the page lists first; info-level alerts (nothing to act on, e.g. published results nothing predicts)
# are one click away.
FIRST_SEVERITIES = tuple(s for s in SEVERITIES if s != "info")
SHOW = {"alerts": True, "benchmarks that are not alerts": False, "every benchmark": None}


def render() -> None:
    url = state.db_url()
    state.follow_store(url)
    st.title("Alerts")
    st.caption(
        "One verdict per benchmark, against the best prediction that covers it ("
        + ", else ".join(VERDICT_ORDER)
        + "). A gap is an alert when it exceeds both its threshold (the deployment's own, else the global "
        f"{state.gap_threshold(url):.0%}) and the prediction's own error band; an invalid or out-of-range "
        "benchmark always is. " + GAP_CONVENTION
    )
    filters = alert_filters(url)
    rows, selected_id = alert_list(url, filters)
    who = identity.who_input(
        "Your name (recorded in the history)",
        key="alerts_who",
        value=st.session_state.get("investigator", ""),
    )
    st.session_state["investigator"] = who
    with st.expander("Triage: groups of alerts, muted diagnoses"):
        group_change(url, filters, who)
        muted_diagnoses(url, who)
    alert = chosen_alert(url, rows, selected_id)
    st.divider()
    alert_summary(alert)
    left, right = st.columns([3, 2], gap="large")
    with left:
        reasoning(alert)
    with right:
        investigation(url, alert, who)


def alert_filters(url: str) -> AlertFilters:
    """The filter menus (status, severity, diagnosis, what to show, source, deployment, run, muted), each
    in the URL; the alerts they choose."""
    choices = state.alert_choices(url)
    url_state = urlstate.UrlState("alerts")
    url_state.restore_many("alerts_status", "status", GAP_STATUSES)
    if "alerts_status" not in st.session_state:
        st.session_state["alerts_status"] = list(ACTIVE_STATUSES)
    url_state.restore_many("alerts_severity", "severity", SEVERITIES)
    if "alerts_severity" not in st.session_state:
        # info-level alerts one click away, not in the way; a link to one run or deployment shows all
        targeted = any(param in st.query_params for param in ("run", "deployment", "alert"))
        st.session_state["alerts_severity_default"] = [] if targeted else list(FIRST_SEVERITIES)
        st.session_state["alerts_severity"] = st.session_state["alerts_severity_default"]
    url_state.restore("alerts_diagnosis", "diagnosis", DIAGNOSIS_CODES)
    url_state.restore("alerts_source", "source", choices["source"])
    url_state.restore("alerts_deployment", "deployment", choices["deployment"])
    url_state.restore("alerts_run", "run", choices["run"])
    row1 = st.columns(4)
    statuses = row1[0].multiselect("Status", GAP_STATUSES, key="alerts_status")
    severities = row1[1].multiselect("Severity", SEVERITIES, key="alerts_severity")
    diagnosis = row1[2].selectbox("Leading diagnosis", [ANY, *DIAGNOSIS_CODES], key="alerts_diagnosis")
    show = row1[3].selectbox("Show", list(SHOW), key="alerts_show")
    row2 = st.columns(4)
    source = row2[0].selectbox("Judged against", [ANY, *choices["source"]], key="alerts_source")
    deployment = row2[1].selectbox("Deployment", [ANY, *choices["deployment"]], key="alerts_deployment")
    run = row2[2].selectbox("Run", [ANY, *choices["run"]], key="alerts_run")
    show_muted = row2[3].toggle("Muted ones too", key="alerts_muted")
    url_state.publish("status", statuses, list(ACTIVE_STATUSES))
    url_state.publish("severity", severities, st.session_state.get("alerts_severity_default", []))
    for param, value in (
        ("diagnosis", diagnosis),
        ("source", source),
        ("deployment", deployment),
        ("run", run),
    ):
        url_state.publish(param, value, ANY)
    return AlertFilters(
        statuses=tuple(statuses),
        severities=tuple(severities),
        source=None if source == ANY else source,
        deployment=None if deployment == ANY else deployment,
        run=None if run == ANY else run,
        diagnosis=None if diagnosis == ANY else diagnosis,
        raised=SHOW[show],
        muted=None if show_muted else False,
    )


def alert_list(url: str, filters: AlertFilters) -> tuple[list[dict], int | None]:
    """One page of the matching alerts (and a button for the info-level ones left out); returns the page's
    rows and the alert selected in the table, if one is."""
    _, total = state.alert_page(url, filters, 0, 1)
    if "info" not in filters.severities and filters.severities:
        hidden = state.open_alert_counts(url).get("info", 0)
        if hidden:
            st.button(
                f"Show the {hidden:,} info-level alert{'s' if hidden != 1 else ''} too",
                icon=SEVERITY_ICONS["info"],
                key="alerts_show_info",
                on_click=lambda: st.session_state.update(alerts_severity=[*filters.severities, "info"]),
            )
    pages = max(1, -(-total // PAGE_ROWS))
    page = st.number_input(f"Page (of {pages:,})", 1, pages, 1, key="alerts_page") if pages > 1 else 1
    rows, _ = state.alert_page(url, filters, (page - 1) * PAGE_ROWS, PAGE_ROWS, count=False)  # counted above
    if not rows:
        st.success("No alert matches these filters.")
        return rows, None
    return rows, alert_table(rows, filters, page, total)


def alert_table(rows: list[dict], filters: AlertFilters, page: int, total: int) -> int | None:
    """The page's alerts as a table; returns the id of the row selected (and puts it in the URL)."""
    table = pd.DataFrame(
        [
            {
                "id": r["alert_id"],
                "severity": (r["severity"] or "none") if r["is_alert"] else "-",
                "gap": None if r["gap"] is None else r["gap"] * 100,
                "run": r["run"],
                "checkpoint": r["checkpoint"],
                "setting": setting_label(r),
                "measured": r["measured_tps"],
                "predicted": r["predicted_tps"],
                "deployment": r["deployment"],
                "against": r["source"],
                "status": r["status"] + (" (muted)" if r["muted"] else ""),
                # the leading diagnosis (what groups and mutes use) first, then the others
                "diagnoses": ", ".join(
                    [r["code"], *(d["code"] for d in r["diagnoses"] if d["code"] != r["code"])]
                    if r["code"]
                    else [d["code"] for d in r["diagnoses"]]
                )
                or "-",
            }
            for r in rows
        ]
    )
    context = tables.context_labels([(r["input_tokens"], r["output_tokens"]) for r in rows])
    if context is not None:  # another prompt length is another point: say which
        table.insert(list(table.columns).index("setting") + 1, "context", context)
    event = tables.show(
        table,
        hide_index=True,
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
        key=f"alerts_table_{hash(filters)}_{page}",
        column_config={
            # wide enough for the largest id on the page (six digits at 400,000 benchmarks)
            "id": st.column_config.NumberColumn(format="%d", width=14 + 9 * len(str(table["id"].max()))),
            "severity": st.column_config.TextColumn(width=70),
            "gap": st.column_config.NumberColumn(format="%+.1f%%", width=65),
            # long drafter names get the width they need (app/tables.py); the table scrolls sideways
            "run": st.column_config.TextColumn(),
            "checkpoint": st.column_config.TextColumn(width=80),
            "setting": st.column_config.TextColumn(width=100),
            "context": st.column_config.TextColumn(
                width=105, help="mean input / output tokens per request, where the file states them"
            ),
            "measured": st.column_config.NumberColumn(
                "measured tok/s", format="%.1f", width=75, help="tok/s per request"
            ),
            "predicted": st.column_config.NumberColumn(
                "predicted tok/s", format="%.1f", width=75, help="tok/s per request"
            ),
            "deployment": st.column_config.TextColumn(),
            "against": st.column_config.TextColumn(width=75),
            "status": st.column_config.TextColumn(width=85),
        },
    )
    first, last = (page - 1) * PAGE_ROWS + 1, (page - 1) * PAGE_ROWS + len(rows)
    st.caption(
        f"{total:,} match; {first:,}-{last:,} shown, the most severe first, then the largest gap. "
        "Select a row to investigate it."
    )
    if event.selection.rows:
        selected_id = int(table.iloc[event.selection.rows[0]]["id"])
        st.query_params["alert"] = str(selected_id)
        return selected_id
    return None


def group_change(url: str, filters: AlertFilters, who: str) -> None:
    """The alerts grouped by deployment, run or diagnosis, and a form that changes a group's status."""
    by = st.radio("Group by", GROUPINGS, horizontal=True, key="alerts_group_by")
    groups = state.alert_groups(url, filters, by)
    if groups.empty:
        st.caption("Nothing to group.")
    else:
        tables.show(groups, hide_index=True, width="stretch", key="alerts_groups")
        with st.form("alerts_group_form"):
            cols = st.columns([2, 1, 3])
            group = cols[0].selectbox(
                f"Every alert of this {by}", groups["group"].tolist(), key="alerts_group"
            )
            group_status = cols[1].selectbox("becomes", GAP_STATUSES, key="alerts_group_status")
            group_note = cols[2].text_input("Note", key="alerts_group_note")
            if st.form_submit_button("Change the group", icon=":material/done_all:"):
                field = {"deployment": "deployment", "run": "run", "diagnosis": "diagnosis"}[by]
                chosen = dict(vars(filters)) | {field: None if group == "(none)" else group}
                try:
                    events = state.write(
                        alerts.change_group, AlertFilters(**chosen), group_status, who, group_note
                    )
                except AlertChangeError as exc:
                    st.error(str(exc))
                else:
                    st.toast(f"{len(events)} alert(s) are {group_status}.")
                    st.rerun()


def muted_diagnoses(url: str, who: str) -> None:
    """The diagnoses muted per deployment, and a button that lifts one."""
    mutes = state.mutes(url)
    st.markdown("**Muted diagnoses**")
    if mutes.empty:
        st.caption("None: every alert is shown.")
    else:
        tables.show(mutes, hide_index=True, width="stretch", key="alerts_mutes")
        lift = st.selectbox(
            "Lift a mute",
            mutes["id"].tolist(),
            format_func=lambda i: (
                f"#{i}: {mutes.set_index('id').loc[i, 'diagnosis']} on "
                f"{mutes.set_index('id').loc[i, 'deployment']}"
            ),
            key="alerts_lift",
        )
        if st.button("Lift it", key="alerts_lift_button", icon=":material/notifications_active:"):
            try:
                state.write(alerts.lift_mute, lift, who)
            except AlertChangeError as exc:
                st.error(str(exc))
            else:
                st.rerun()


def chosen_alert(url: str, rows: list[dict], selected_id: int | None) -> dict:
    """The alert to show in full: the one selected, else `?alert=`, else the first listed; stops the page
    when there is none."""
    asked = st.query_params.get("alert")
    if asked is not None and selected_id is None:
        selected_id = int(asked) if asked.isdigit() else None
    if selected_id is None and rows:
        selected_id = rows[0]["alert_id"]
    if selected_id is None:
        st.stop()

    alert = state.alert_detail(url, selected_id)
    if alert is None:
        st.error(f"No alert with id {md(asked)}.")
        st.stop()
    return alert


def alert_summary(alert: dict) -> None:
    """The alert's headline, what it is on, its mute and supersession, and its numbers."""
    aid = alert["alert_id"]
    severity = alert["severity"] or "none"
    st.subheader(f"Alert #{aid}: {md(alert['run'])} / {md(alert['checkpoint'])}")
    facts = [f"on **{md(alert['deployment'])}**", setting_label(alert), f"concurrency {alert['concurrency']}"]
    if alert["dataset"]:
        facts.append(f"dataset {md(alert['dataset'])}")
    facts.append(f"against the **{md(alert['source'])}** prediction")
    st.markdown(
        ", ".join(facts)
        + (f"  \n{SEVERITY_ICONS[severity]} {severity}" if alert["is_alert"] else "  \nnot an alert")
        + f" · status **{alert['status']}**"
    )
    st.markdown(f"#### {md(lead_line(alert))}")
    if alert["mute"]:
        m = alert["mute"]
        st.info(
            f"Muted: {md(m['diagnosis'])} on {md(alert['deployment'])} by {md(m['who'])}: {md(m['reason'])}",
            icon=":material/notifications_off:",
        )
    if alert["superseded_by_id"]:
        st.info(
            f"This benchmark is superseded by benchmark #{alert['superseded_by_id']}.", icon=":material/redo:"
        )

    cols = list(st.columns(5))
    # an acceptance collapse without a prediction has no gap: its tok/s are not judged
    cols[0].metric("Measured", "-" if alert["measured_tps"] is None else f"{alert['measured_tps']:.1f} tok/s")
    cols[1].metric(
        "Predicted", "-" if alert["predicted_tps"] is None else f"{alert['predicted_tps']:.1f} tok/s"
    )
    cols[2].metric("Gap", gap_text(alert["gap"]))
    if alert["measured_round_ms"] is not None and alert["predicted_round_ms"] is not None:
        cols[3].metric(
            "Round",
            f"{alert['measured_round_ms']:.1f} ms",
            f"{alert['measured_round_ms'] - alert['predicted_round_ms']:+.1f} ms vs predicted",
            delta_color="inverse",
        )
    if alert["measured_accept_length"] is not None:
        cols[4].metric(
            "Accept length τ",
            f"{alert['measured_accept_length']:.2f}",
            None
            if alert["predicted_accept_length"] is None
            else f"{alert['measured_accept_length'] - alert['predicted_accept_length']:+.2f} vs predicted",
        )


def reasoning(alert: dict) -> None:
    """The verdict and diagnoses, the waterfall, every source's gap and the benchmark's facts."""
    aid = alert["alert_id"]
    with st.expander("The model's reasoning: verdict and diagnoses", icon=":material/psychology:"):
        st.caption(f"Verdict: {md(alert['reason'] or 'not judged yet: run specdash predict')}")
        if not alert["diagnoses"]:
            st.info("No rule explains this gap; the waterfall shows where it sits.")
        for d in alert["diagnoses"]:
            box = {"critical": st.error, "warning": st.warning}.get(d["severity"], st.info)
            box(f"**{d['code']}**: {md(d['message'])}", icon=SEVERITY_ICONS.get(d["severity"]))
    st.markdown("**From predicted to measured**")
    if alert["gap_id"] is not None:
        st.plotly_chart(waterfall_figure(alert), width="stretch", key=f"alerts_waterfall_{aid}")
    st.markdown("**Every prediction source** (analysis; the verdict is against the marked one)")
    tables.show(
        alert["analysis"].assign(gap=alert["analysis"]["gap"] * 100),  # percent points, as every gap shown
        hide_index=True,
        width="stretch",
        key=f"alerts_sources_{aid}",
        column_config={
            "predicted_tps": st.column_config.NumberColumn("predicted tok/s", format="%.1f"),
            "gap": st.column_config.NumberColumn(format="%+.1f%%"),
            "verdict": st.column_config.CheckboxColumn("judges"),
        },
    )
    with st.expander("Benchmark and prediction"):
        facts = pd.DataFrame(benchmark_facts(alert), columns=["what", "value"]).astype(str)
        tables.show(facts, hide_index=True, width="stretch", key=f"alerts_facts_{aid}")


def investigation(url: str, alert: dict, who: str) -> None:
    """The alert's status and note, a mute of its diagnosis, its history and a rerun that supersedes it."""
    aid = alert["alert_id"]
    st.markdown("**Investigation**")
    # every widget of the form is keyed by the alert: another alert's edits never carry over
    with st.form(f"alerts_status_form_{aid}"):
        status = st.selectbox(
            "Status", GAP_STATUSES, index=GAP_STATUSES.index(alert["status"]), key=f"alerts_new_status_{aid}"
        )
        note = st.text_area("Note", placeholder="What you found, what you did", key=f"alerts_note_{aid}")
        if st.form_submit_button("Save status", type="primary", icon=":material/save:"):
            try:
                state.write(alerts.change_status, aid, status, who, note)
            except AlertChangeError as exc:
                st.error(str(exc))
            else:
                st.toast(f"Alert #{aid} is {status}.")
                st.rerun()
    if alert["code"] and not alert["mute"]:
        with st.form(f"alerts_mute_form_{aid}"):
            why = st.text_input(
                f"Mute {md(alert['code'])} on this deployment because", key=f"alerts_mute_reason_{aid}"
            )
            if st.form_submit_button("Mute", icon=":material/notifications_off:"):
                try:
                    state.write(alerts.mute_diagnosis, alert["deployment"], alert["code"], why, who)
                except AlertChangeError as exc:
                    st.error(str(exc))
                else:
                    st.toast(f"{md(alert['code'])} is muted on {md(alert['deployment'])}.")
                    st.rerun()
    if alert["note"]:
        st.caption(f"Current note: {md(alert['note'])}")
    history = state.alert_history(url, aid)
    st.markdown("**History**")
    if history.empty:
        st.caption("No changes yet.")
    else:
        tables.show(
            history,
            hide_index=True,
            width="stretch",
            key=f"alerts_history_{aid}",
            column_config={"at": st.column_config.DatetimeColumn("when (UTC)", format="YYYY-MM-DD HH:mm")},
        )
    superseded_by(url, alert, who)


def superseded_by(url: str, alert: dict, who: str) -> None:
    """The benchmark that supersedes this one, or a form that links one of the checkpoint's others."""
    aid = alert["alert_id"]
    st.markdown("**Superseded by a rerun**")
    candidates = state.supersede_candidates(url, alert["benchmark_id"])
    if alert["superseded_by_id"]:
        st.caption(f"Benchmark #{alert['benchmark_id']} is superseded by #{alert['superseded_by_id']}.")
    elif candidates.empty:
        st.caption("No other benchmark of this checkpoint to link as its rerun.")
    else:
        options = {
            int(c["benchmark_id"]): f"#{c['benchmark_id']}: {setting_label(c)}, {c['decode_tps']:.1f} tok/s, "
            f"{c['deployment']}" + (f" ({c['label']})" if c["label"] else "")
            for c in candidates.to_dict("records")
        }
        with st.form(f"alerts_supersede_form_{aid}"):
            rerun = st.selectbox(
                "Valid rerun of this benchmark",
                list(options),
                format_func=lambda i: options[i],
                key=f"alerts_rerun_{aid}",
            )
            reason = st.text_input("Why the first run is invalid", key=f"alerts_rerun_note_{aid}")
            if st.form_submit_button("Link rerun and resolve", icon=":material/link:"):
                try:
                    state.write(supersede, alert["benchmark_id"], rerun, who, reason)
                except AlertChangeError as exc:
                    st.error(str(exc))
                else:
                    st.toast(f"Benchmark #{alert['benchmark_id']} is superseded by #{rerun}.")
                    st.rerun()


render()
