"""Upload: benchmark results, training logs or specdash files; the detected format and a validation report
for each, links to run/checkpoint/deployment editable before saving, then the new benchmarks with their
predictions and any new alerts."""

import pandas as pd
import streamlit as st

from specdash.app import state
from specdash.app.text import SEVERITY_ICONS, gap_text, md, setting_label
from specdash.app.uploads import check_upload
from specdash.ingest.formats import FORMATS
from specdash.ingest.pipeline import describe, ingest_bytes
from specdash.ingest.problems import format_report
from specdash.ingest.store import LinkOptions

LINK_FIELDS = ("run", "checkpoint", "deployment")

url = state.db_url()
st.title("Upload")
limit_mb = st.get_option("server.maxUploadSize")
st.caption(
    f"Any file `specdash ingest` reads, several at once, up to {limit_mb} MB each. Each file is checked in full "
    "before anything is written, and a file with any problem writes nothing."
)
with st.expander("Formats specdash reads"):
    st.table(pd.DataFrame([{"format": f.name, "what": f.help} for f in FORMATS]))

if "upload_generation" not in st.session_state:
    st.session_state["upload_generation"] = 0
files = st.file_uploader(
    "Benchmark results, training logs, specdash JSON",
    accept_multiple_files=True,
    key=f"upload_files_{st.session_state['upload_generation']}",
)

if files:
    checks = [(file, check_upload(file.name, file.getvalue())) for file in files]
    st.subheader("Validation")
    for _, check in checks:
        with st.container(border=True):
            st.markdown(
                f"**{md(check.name)}**, {check.size_bytes:,} bytes, "
                f"format: `{check.format or 'not recognised'}`, {check.summary}"
            )
            if check.ok:
                st.success("Valid: ready to save.", icon=":material/check_circle:")
            else:
                st.error(
                    f"{len(check.problems)} problem(s): nothing from this file will be written.",
                    icon=":material/block:",
                )
                st.code(check.report, language=None)
    valid = [(file, check) for file, check in checks if check.ok]
    if valid:
        st.subheader("Link and save")
        st.caption(
            "Leave a cell empty to use what the file says. Run and checkpoint name the drafter of every "
            "benchmark in the file; deployment replaces the file's deployment. Names not stored yet are "
            "created."
        )
        links = pd.DataFrame(
            [
                {
                    "file": check.name,
                    "format": check.format,
                    "records": check.summary,
                    "run": None,
                    "checkpoint": None,
                    "deployment": None,
                }
                for _, check in valid
            ]
        )
        edited = st.data_editor(
            links,
            hide_index=True,
            width="stretch",
            disabled=["file", "format", "records"],
            key=f"upload_links_{st.session_state['upload_generation']}",
            column_config={name: st.column_config.TextColumn(name) for name in LINK_FIELDS},
        )
        if st.button(f"Save {len(valid)} file(s)", type="primary", icon=":material/save:", key="upload_save"):
            saved = []
            for (file, check), (_, row) in zip(valid, edited.iterrows(), strict=True):
                given = {
                    name: (str(row[name]).strip() or None) if pd.notna(row[name]) else None
                    for name in LINK_FIELDS
                }
                result = ingest_bytes(state.engine(), check.name, file.getvalue(), link=LinkOptions(**given))
                saved.append(
                    {
                        "summary": describe(result),
                        "ok": result.ok,
                        "report": format_report(result.problems),
                        "benchmark_ids": list(result.store.benchmark_ids) if result.store else [],
                    }
                )
            state.clear_caches()
            st.session_state["upload_results"] = saved
            st.session_state["upload_generation"] += 1  # a fresh, empty uploader
            st.rerun()

results = st.session_state.get("upload_results")
if results:
    st.subheader("Saved")
    for item in results:
        (st.success if item["ok"] else st.error)(md(item["summary"]))
        if item["report"]:
            st.code(item["report"], language=None)
    ids = tuple(i for item in results for i in item["benchmark_ids"])
    outcomes = state.benchmark_outcomes(url, ids)
    if outcomes.empty:
        st.info("No new benchmark (already stored ones are not stored twice).")
    else:
        table = outcomes.assign(setting=outcomes.apply(setting_label, axis=1), gap=outcomes["gap"])
        st.dataframe(
            table[
                [
                    "benchmark_id",
                    "run",
                    "checkpoint",
                    "setting",
                    "dataset",
                    "measured_tps",
                    "source",
                    "predicted_tps",
                    "gap",
                    "is_alert",
                    "severity",
                    "deployment",
                ]
            ],
            hide_index=True,
            width="stretch",
            key="upload_outcomes",
            column_config={
                "benchmark_id": st.column_config.NumberColumn("benchmark", width=70),
                "measured_tps": st.column_config.NumberColumn("measured tok/s", format="%.1f"),
                "predicted_tps": st.column_config.NumberColumn("predicted tok/s", format="%.1f"),
                "gap": st.column_config.NumberColumn("gap", format="percent"),
                "is_alert": st.column_config.CheckboxColumn("alert"),
            },
        )
        new_alerts = outcomes[outcomes["is_alert"]]
        st.markdown("**New alerts**")
        if new_alerts.empty:
            st.success("No gap at or above the threshold: the measurements agree with the predictions.")
        for row in new_alerts.to_dict("records"):
            severity = row["severity"] or "none"
            st.page_link(
                "views/alerts.py",
                icon=SEVERITY_ICONS[severity],
                label=(
                    f"Alert #{row['gap_id']} ({severity}): {md(row['run'])} / {md(row['checkpoint'])}, "
                    f"{setting_label(row)}, gap {gap_text(row['gap'])} against {md(row['source'])}"
                ),
                query_params={"alert": str(int(row["gap_id"]))},
            )
