"""Upload: benchmark results, training logs or specdash files, several at once. Each is ingested as a dry run
first (detected format, validation report, where every benchmark would link, its predicted gap); links to
run/checkpoint/deployment are editable before saving; after saving, the new benchmarks with their
predictions and any new alerts, each with a link."""

import pandas as pd
import streamlit as st

from specdash.app import identity, state, tables, uploads
from specdash.app.errors import guarded
from specdash.app.text import SEVERITY_ICONS, md, number_text
from specdash.db.changes import acting_as
from specdash.ingest import trackers
from specdash.ingest.describe import describe, describe_new_names
from specdash.ingest.formats import FORMATS
from specdash.ingest.pipeline import ingest
from specdash.ingest.policy import IngestPolicy
from specdash.ingest.problems import format_report
from specdash.ingest.sources import UploadSource
from specdash.labels import gap_text, setting_label

LINK_FIELDS = ("run", "checkpoint", "deployment")
# the new benchmarks' table: its columns, and those shown as text with a dash where empty
OUTCOME_COLUMNS = [
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
OUTCOME_TEXT = ["run", "checkpoint", "dataset", "source", "severity", "deployment"]


def render() -> None:
    url = state.db_url()
    st.title("Upload")
    if identity.read_only():  # a dry run writes (and rolls back): a read-only dashboard has no upload
        st.info(f"{identity.READ_ONLY_MESSAGE} Load files with `specdash ingest`.", icon=":material/lock:")
        st.stop()
    if identity.trusted() and not identity.signed_in_user():  # nothing is read, checked or locked before
        st.info("Uploading needs a signed-in user.", icon=":material/lock:")
        identity.sign_in_prompt("upload")
        st.stop()
    limit_mb = st.get_option("server.maxUploadSize")
    st.caption(
        f"Any file `specdash ingest` reads, several at once, up to {limit_mb} MB each. Each file is ingested as "
        "a dry run first; a file with any problem writes nothing."
    )
    with st.expander("Formats specdash reads"):
        readers = [(f.name, f.help) for f in FORMATS] + [(r.name, r.help) for r in trackers.readers()]
        st.table(pd.DataFrame([{"format": name, "what": text} for name, text in readers]))

    if "upload_generation" not in st.session_state:
        st.session_state["upload_generation"] = 0
    generation = st.session_state["upload_generation"]
    files = st.file_uploader(
        "Benchmark results, training logs, specdash JSON, TensorBoard event files, mlflow.db",
        accept_multiple_files=True,
        key=f"upload_files_{generation}",
    )
    if files:
        check_and_save(url, files, generation)
    results = st.session_state.get("upload_results")
    if results:
        saved_results(url, results)


def given(value) -> str | None:
    return (str(value).strip() or None) if pd.notna(value) else None


def check_and_save(url: str, files: list, generation: int) -> None:
    """The links of each file, its dry run, and saving the files that passed it."""
    links, new_names = link_table(files, generation)
    st.subheader("Check")
    checked = []
    for file, (_, row) in zip(files, links.iterrows(), strict=True):
        link = {name: given(row[name]) for name in LINK_FIELDS}
        with guarded(f"Checking {file.name}"):
            preview = state.preview_upload(
                url, file.file_id, file.name, file.getvalue(), **link, new_names=new_names
            )
        checked.append((file, link, preview))
        with st.container(border=True):
            show_preview(file, preview)
    ready = [(file, link) for file, link, preview in checked if uploads.can_save(preview)]
    if ready and st.button(
        f"Save {len(ready)} file(s)", type="primary", icon=":material/save:", key="upload_save"
    ):
        save(ready, new_names)


def link_table(files: list, generation: int) -> tuple[pd.DataFrame, bool]:
    """The run, checkpoint and deployment each file links to (as edited), and whether look-alike names are
    new."""
    st.subheader("Link")
    st.caption(
        "Leave a cell empty to use what the file says. Run and checkpoint name the drafter of every benchmark "
        "in the file; deployment replaces the file's deployment. Names not stored yet are created."
    )
    links = tables.edit(
        pd.DataFrame([{"file": f.name, "run": None, "checkpoint": None, "deployment": None} for f in files]),
        hide_index=True,
        width="stretch",
        disabled=["file"],
        key=f"upload_links_{generation}",
        column_config={name: st.column_config.TextColumn(name) for name in LINK_FIELDS},
    )
    new_names = st.checkbox(
        "Create look-alike names as new",
        key="upload_new_names",
        help="As `specdash ingest --new-names`: a deployment, run or checkpoint whose name differs from a "
        "stored one only by case, spacing or look-alike characters (`PCle` for `PCIe`) is created as a new "
        "one; without it such a file is refused with 'did you mean ...?'.",
    )
    return links, new_names


def show_preview(file, preview) -> None:
    """One file's dry run: its format and size, whether it can be saved, its problems, links and gaps."""
    records = preview.store.records if preview.store else 0
    st.markdown(
        f"**{md(file.name)}**, {file.size:,} bytes, format `{preview.format or 'not recognised'}`, "
        f"{records} record(s); would add {md(uploads.would_create(preview))}"
    )
    if preview.notes:
        st.caption(md(preview.notes))
    if preview.already_ingested:
        st.info(f"Already stored as {md(preview.already_ingested)}: saving would skip it.")
    elif uploads.can_save(preview):
        st.success("Valid: ready to save.", icon=":material/check_circle:")
    else:
        st.error(
            f"{len(preview.problems)} problem(s): nothing from this file will be written.",
            icon=":material/block:",
        )
        st.code(uploads.report(preview), language=None)
        if uploads.look_alike(preview):
            st.info(
                "A name looks like a stored one: fix the name in the file or the links above, or tick "
                "**Create look-alike names as new** (the page's `--new-names`) if it is new on purpose."
            )
    if preview.links:
        tables.show(uploads.links_frame(preview), hide_index=True, width="stretch")
    if preview.gaps:
        tables.show(
            uploads.gaps_frame(preview).assign(gap=lambda f: f["gap"] * 100),
            hide_index=True,
            width="stretch",
            column_config={
                "measured tok/s": st.column_config.NumberColumn(format="%.1f"),
                "predicted tok/s": st.column_config.NumberColumn(format="%.1f"),
                "gap": st.column_config.NumberColumn(format="%+.1f%%"),
            },
        )


def save(ready: list, new_names: bool) -> None:
    """Ingest the files that passed their dry run, keep what each stored for the next run, and start over
    with an empty uploader."""
    saved = []
    who = state.writer()
    for file, link in ready:
        with guarded(f"Saving {file.name}"), acting_as(who):
            policy = IngestPolicy(link=state.upload_link(**link, new_names=new_names))
            result = ingest(state.engine(), UploadSource(file.name, file.getvalue()), policy)
        saved.append(
            {
                "summary": describe(result),
                "new_names": describe_new_names(result),
                "ok": result.ok,
                "report": format_report(result.problems),
                "benchmark_ids": list(result.store.benchmark_ids) if result.store else [],
            }
        )
    state.clear_caches()
    st.session_state["upload_results"] = saved
    st.session_state["upload_generation"] += 1  # a fresh, empty uploader
    st.rerun()


def saved_results(url: str, results: list[dict]) -> None:
    """What the last save stored: each file's summary, its new benchmarks with their predictions, new alerts."""
    st.subheader("Saved")
    for item in results:
        (st.success if item["ok"] else st.error)(md(item["summary"]))
        if item.get("new_names"):
            st.caption(md(item["new_names"].strip()))
        if item["report"]:
            st.code(item["report"], language=None)
    ids = tuple(i for item in results for i in item["benchmark_ids"])
    outcomes = state.benchmark_outcomes(url, ids)
    if outcomes.empty:
        st.info("No new benchmark (benchmarks stored before are not stored twice).")
        return
    outcome_table(outcomes)
    new_alerts(outcomes)


def outcome_table(outcomes: pd.DataFrame) -> None:
    table = outcomes.assign(
        setting=outcomes.apply(setting_label, axis=1),
        gap=outcomes["gap"].map(gap_text),
        predicted_tps=outcomes["predicted_tps"].map(number_text),
        **{c: outcomes[c].astype(object).where(outcomes[c].notna(), "-") for c in OUTCOME_TEXT},
    )
    tables.show(
        table[OUTCOME_COLUMNS],
        hide_index=True,
        width="stretch",
        key="upload_outcomes",
        column_config={
            "benchmark_id": st.column_config.NumberColumn("benchmark", width=70),
            "measured_tps": st.column_config.NumberColumn("measured tok/s", format="%.1f"),
            "predicted_tps": st.column_config.TextColumn("predicted tok/s"),
            "gap": st.column_config.TextColumn("gap"),
            "is_alert": st.column_config.CheckboxColumn("alert"),
        },
    )


def new_alerts(outcomes: pd.DataFrame) -> None:
    """The alerts the new benchmarks raised, each a link to it, or why there are none."""
    alerts = outcomes[outcomes["is_alert"]]  # the verdict's row of each benchmark
    st.markdown("**New alerts**")
    compared = outcomes[outcomes["gap"].notna()]
    unpredicted = outcomes["benchmark_id"].nunique() - compared["benchmark_id"].nunique()
    if unpredicted:
        st.info(
            f"{unpredicted} new benchmark(s) got no prediction, so nothing to compare: a no-speculation "
            "baseline, or a drafter without acceptance data or a deployment without a cost profile (set one on "
            "the **Settings** page)."
        )
    if alerts.empty and not compared.empty:
        st.success(
            f"No alert: the {compared['benchmark_id'].nunique()} benchmark(s) with a prediction agree with it "
            "within its threshold and error band."
        )
    for new_alert in alerts.to_dict("records"):
        severity = new_alert["severity"] or "none"
        st.page_link(
            "views/alerts.py",
            icon=SEVERITY_ICONS[severity],
            label=(
                f"Alert #{int(new_alert['alert_id'])} ({severity}): {md(new_alert['run'])} / {md(new_alert['checkpoint'])}, "
                f"{setting_label(new_alert)}, gap {gap_text(new_alert['gap'])} against {md(new_alert['source'])}"
            ),
            query_params={"alert": str(int(new_alert["alert_id"]))},
        )


render()
