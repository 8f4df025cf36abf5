"""Alerts: every gap at or above its threshold, filtered and paged; one alert in full (diagnoses, the
waterfall from predicted to measured, the benchmark) with its investigation: status, note, who/when history,
and the benchmark that supersedes an invalid one. `?alert=ID` opens an alert."""

import pandas as pd
import streamlit as st

from specdash.app import identity, state, urlstate
from specdash.app.alert_charts import waterfall_figure
from specdash.app.text import SEVERITY_ICONS, md, number_text
from specdash.db import alerts
from specdash.db.alerts import DIAGNOSIS_CODES, SEVERITIES, AlertChangeError, AlertFilters
from specdash.db.models import ACTIVE_STATUSES, GAP_STATUSES
from specdash.labels import gap_text, setting_label

PAGE_ROWS = 50
ANY = "any"

url = state.db_url()
st.title("Alerts")
st.caption(
    f"Every gap between measured and predicted tok/s at or above its threshold (the deployment's own, else "
    f"the global {state.gap_threshold(url):.0%}). gap = 1 - measured / predicted: positive is slower."
)

choices = state.alert_choices(url)
url_state = urlstate.UrlState("alerts")
url_state.restore_many("alerts_status", "status", GAP_STATUSES)
if "alerts_status" not in st.session_state:
    st.session_state["alerts_status"] = list(ACTIVE_STATUSES)
url_state.restore_many("alerts_severity", "severity", SEVERITIES)
url_state.restore("alerts_diagnosis", "diagnosis", DIAGNOSIS_CODES)
url_state.restore("alerts_source", "source", choices["source"])
url_state.restore("alerts_deployment", "deployment", choices["deployment"])
url_state.restore("alerts_run", "run", choices["run"])
row1 = st.columns(3)
statuses = row1[0].multiselect("Status", GAP_STATUSES, key="alerts_status")
severities = row1[1].multiselect("Severity", SEVERITIES, key="alerts_severity")
diagnosis = row1[2].selectbox("Diagnosis", [ANY, *DIAGNOSIS_CODES], key="alerts_diagnosis")
row2 = st.columns(3)
source = row2[0].selectbox("Prediction source", [ANY, *choices["source"]], key="alerts_source")
deployment = row2[1].selectbox("Deployment", [ANY, *choices["deployment"]], key="alerts_deployment")
run = row2[2].selectbox("Run", [ANY, *choices["run"]], key="alerts_run")
url_state.publish("status", statuses, list(ACTIVE_STATUSES))
url_state.publish("severity", severities)
for param, value in (("diagnosis", diagnosis), ("source", source), ("deployment", deployment), ("run", run)):
    url_state.publish(param, value, ANY)
filters = AlertFilters(
    statuses=tuple(statuses),
    severities=tuple(severities),
    source=None if source == ANY else source,
    deployment=None if deployment == ANY else deployment,
    run=None if run == ANY else run,
    diagnosis=None if diagnosis == ANY else diagnosis,
)

_, total = state.alert_page(url, filters, 0, 1)
pages = max(1, -(-total // PAGE_ROWS))
page = st.number_input("Page", 1, pages, 1, key="alerts_page") if pages > 1 else 1
rows, total = state.alert_page(url, filters, (page - 1) * PAGE_ROWS, PAGE_ROWS)

selected_id = None
if rows:
    table = pd.DataFrame(
        [
            {
                "id": r["gap_id"],
                "severity": r["severity"] or "none",
                "gap": r["gap"] * 100,
                "run": r["run"],
                "checkpoint": r["checkpoint"],
                "setting": setting_label(r),
                "measured": r["measured_tps"],
                "predicted": r["predicted_tps"],
                "deployment": r["deployment"],
                "source": r["source"],
                "status": r["status"],
                "diagnoses": ", ".join(d["code"] for d in r["diagnoses"]),
            }
            for r in rows
        ]
    )
    event = st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
        key=f"alerts_table_{hash(filters)}_{page}",
        column_config={
            "id": st.column_config.NumberColumn(width=40),
            "severity": st.column_config.TextColumn(width=70),
            "gap": st.column_config.NumberColumn(format="%+.1f%%", width=65),
            # long drafter and deployment names are cut in the cell (the full name shows on hover), so the
            # numbers stay on screen
            "run": st.column_config.TextColumn(width=160),
            "checkpoint": st.column_config.TextColumn(width=80),
            "setting": st.column_config.TextColumn(width=100),
            "measured": st.column_config.NumberColumn(format="%.1f", width=75, help="tok/s per request"),
            "predicted": st.column_config.NumberColumn(format="%.1f", width=75, help="tok/s per request"),
            "deployment": st.column_config.TextColumn(width=160),
            "source": st.column_config.TextColumn(width=75),
            "status": st.column_config.TextColumn(width=85),
        },
    )
    first, last = (page - 1) * PAGE_ROWS + 1, (page - 1) * PAGE_ROWS + len(rows)
    st.caption(
        f"{total} alert(s) match; {first}-{last} shown, the most severe first, then the largest gap. Select a row to investigate it."
    )
    if event.selection.rows:
        selected_id = int(table.iloc[event.selection.rows[0]]["id"])
        st.query_params["alert"] = str(selected_id)
else:
    st.success("No alert matches these filters.")

asked = st.query_params.get("alert")
if asked is not None and selected_id is None:
    selected_id = int(asked) if asked.isdigit() else None
if selected_id is None and rows:
    selected_id = rows[0]["gap_id"]
if selected_id is None:
    st.stop()

alert = state.alert_detail(url, selected_id)
if alert is None:
    st.error(f"No alert with id {md(asked)}.")
    st.stop()

st.divider()
severity = alert["severity"] or "none"
st.subheader(f"Alert #{alert['gap_id']}: {md(alert['run'])} / {md(alert['checkpoint'])}")
facts = [f"on **{md(alert['deployment'])}**", setting_label(alert), f"concurrency {alert['concurrency']}"]
if alert["dataset"]:
    facts.append(f"dataset {md(alert['dataset'])}")
facts.append(f"against the **{md(alert['source'])}** prediction")
st.markdown(
    ", ".join(facts)
    + f"  \n{SEVERITY_ICONS[severity]} {severity} · status **{alert['status']}**"
    + ("" if alert["is_alert"] else " · now below its threshold")
)
if alert["superseded_by_id"]:
    st.info(
        f"This benchmark is superseded by benchmark #{alert['superseded_by_id']}.", icon=":material/redo:"
    )

cols = st.columns(5)
cols[0].metric("Measured", f"{alert['measured_tps']:.1f} tok/s")
cols[1].metric("Predicted", f"{alert['predicted_tps']:.1f} tok/s")
cols[2].metric("Gap", gap_text(alert["gap"]))
if alert["measured_round_ms"] is not None:
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
        f"{alert['measured_accept_length'] - alert['predicted_accept_length']:+.2f} vs predicted",
    )

left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown("**Diagnoses**")
    if not alert["diagnoses"]:
        st.info("No rule explains this gap; the waterfall shows where it sits.")
    for d in alert["diagnoses"]:
        box = {"critical": st.error, "warning": st.warning}.get(d["severity"], st.info)
        box(f"**{d['code']}**: {md(d['message'])}", icon=SEVERITY_ICONS.get(d["severity"]))
    st.markdown("**From predicted to measured**")
    st.plotly_chart(waterfall_figure(alert), width="stretch", key="alerts_waterfall")
    with st.expander("Benchmark and prediction"):
        st.dataframe(
            pd.DataFrame(
                [
                    (
                        "benchmark",
                        f"#{alert['benchmark_id']}" + (f" ({alert['label']})" if alert["label"] else ""),
                    ),
                    ("drafter path", alert["drafter_path"] or "-"),
                    ("engine / format", f"{alert['engine'] or '-'} / {alert['source_format']}"),
                    ("hidden states fed to the drafter", number_text(alert["draft_hidden_size"], 0)),
                    (
                        "predicted round",
                        f"{alert['predicted_round_ms']:.2f} ms = verify compute {alert['compute_ms'] or 0:.2f} "
                        f"+ all-reduce {alert['comm_ms'] or 0:.2f} + draft {alert['draft_ms'] or 0:.2f} "
                        f"+ overhead {alert['overhead_ms'] or 0:.2f}",
                    ),
                    ("baseline tok/s", number_text(alert["baseline_tps"], 1)),
                    ("predicted τ from", alert["accept_length_source"] or "-"),
                    ("extrapolated past trained depth", alert["extrapolated"]),
                    ("approximation", alert["approximation"] or "-"),
                ],
                columns=["what", "value"],
            ).astype(str),
            hide_index=True,
            width="stretch",
            key="alerts_facts",
        )

with right:
    st.markdown("**Investigation**")
    who = identity.who_input(
        "Your name (recorded in the history)", key="alerts_who", value=st.session_state.get("investigator", "")
    )
    st.session_state["investigator"] = who
    with st.form(f"alerts_status_form_{alert['gap_id']}"):
        status = st.selectbox(
            "Status", GAP_STATUSES, index=GAP_STATUSES.index(alert["status"]), key="alerts_new_status"
        )
        note = st.text_area("Note", placeholder="What you found, what you did", key="alerts_note")
        if st.form_submit_button("Save status", type="primary", icon=":material/save:"):
            try:
                state.write(alerts.change_status, alert["gap_id"], status, who, note)
            except AlertChangeError as exc:
                st.error(str(exc))
            else:
                st.toast(f"Alert #{alert['gap_id']} is {status}.")
                st.rerun()
    if alert["note"]:
        st.caption(f"Current note: {md(alert['note'])}")
    history = state.alert_history(url, alert["gap_id"])
    st.markdown("**History**")
    if history.empty:
        st.caption("No changes yet.")
    else:
        st.dataframe(
            history,
            hide_index=True,
            width="stretch",
            key="alerts_history",
            column_config={"at": st.column_config.DatetimeColumn("when (UTC)", format="YYYY-MM-DD HH:mm")},
        )

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
        with st.form(f"alerts_supersede_form_{alert['gap_id']}"):
            rerun = st.selectbox(
                "Valid rerun of this benchmark", list(options), format_func=options.get, key="alerts_rerun"
            )
            reason = st.text_input("Why the first run is invalid", key="alerts_rerun_note")
            if st.form_submit_button("Link rerun and resolve", icon=":material/link:"):
                try:
                    state.write(alerts.link_superseding, alert["benchmark_id"], rerun, who, reason)
                except AlertChangeError as exc:
                    st.error(str(exc))
                else:
                    st.toast(f"Benchmark #{alert['benchmark_id']} is superseded by #{rerun}.")
                    st.rerun()
