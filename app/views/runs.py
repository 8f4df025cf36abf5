"""Runs: every run grouped by target model, with tags and a search; archive runs (hidden from the other pages,
nothing deleted), delete them, or undo an ingest, each delete showing the rows it removes before it is done."""

import pandas as pd
import streamlit as st

from specdash.answers import edits
from specdash.app import state, tables, urlstate
from specdash.app.text import md
from specdash.db import runs as run_store
from specdash.db.runs import RunChangeError


def render() -> None:
    url = state.db_url()
    url_state = urlstate.UrlState("runs")
    st.title("Runs")
    st.caption(
        "Every training run, grouped by the target model it drafts for. Tag runs to find them again; archive "
        "the ones you are done with (they leave the pickers and the leaderboard, their data stays)."
    )
    search, show_archived = search_controls(url_state)
    table = state.runs_table(url, search, show_archived)
    if table.empty:
        if search:
            st.info(f"No run matches {md(search)!s}: try fewer words, or **Show archived**.")
        else:
            st.info(
                "No runs yet: upload a SpecForge training log, a W&B/MLflow export or benchmark results on the "
                "**Upload** page, or run `specdash demo`."
            )
        st.stop()
    names = run_table(table, search, show_archived)
    pending_runs(url, names)
    ingested_files(url)


def search_controls(url_state: urlstate.UrlState) -> tuple[str, bool]:
    """The search box and the "Show archived" toggle, kept in the page's URL."""
    controls = st.columns([3, 1])
    url_state.restore("runs_search", "q")
    search = controls[0].text_input(
        "Search",
        key="runs_search",
        placeholder="name, target model, framework or tag",
        icon=":material/search:",
    )
    url_state.restore("runs_archived", "archived", [True, False], parse=lambda v: v == "1")
    show_archived = controls[1].toggle("Show archived", key="runs_archived")
    url_state.publish("q", search.strip() or None)
    url_state.publish("archived", "1" if show_archived else None)
    return search, show_archived


def run_table(table: pd.DataFrame, search: str, show_archived: bool) -> dict[int, str]:
    """The editable table of runs and the buttons acting on its selection; the runs' names by id."""
    targets = table["target_model"].fillna("(no target model)")
    summary = targets.value_counts(sort=False)
    st.caption(
        f"{len(table)} run(s) for {len(summary)} target model(s): "
        + ", ".join(f"{md(t)} ({n})" for t, n in summary.items())
    )
    shown = pd.DataFrame(
        {
            "select": False,
            "target": targets,
            "run": table["name"],
            "tags": table["tags"].map(", ".join),
            "checkpoints": table["checkpoints"],
            "benchmarks": table["benchmarks"],
            "TTT": table["ttt_length"],
            "status": table["status"],
            "archived": table["archived_at"].notna(),
            "framework": table["framework"].fillna("-"),
        }
    )
    edited = tables.edit(
        shown,
        hide_index=True,
        width="stretch",
        disabled=[c for c in shown.columns if c not in ("select", "tags")],
        key=f"runs_editor_{hash((search, show_archived, tuple(table['id'])))}",
        column_config={
            "select": st.column_config.CheckboxColumn("", width=40),
            "target": st.column_config.TextColumn("target model", width=200),
            "run": st.column_config.TextColumn(width=320),
            "tags": st.column_config.TextColumn("tags (comma-separated, editable)", width=200),
            "checkpoints": st.column_config.NumberColumn(width=90),
            "benchmarks": st.column_config.NumberColumn(width=90),
            "TTT": st.column_config.NumberColumn(width=50),
            "archived": st.column_config.CheckboxColumn(width=70),
        },
    )
    ids = table["id"].astype(int).tolist()
    changed_tags = [
        (run_id, [t for t in new.split(",")])
        for run_id, old, new in zip(ids, shown["tags"], edited["tags"].fillna(""), strict=True)
        if old != new
    ]
    selected = [run_id for run_id, picked in zip(ids, edited["select"], strict=True) if picked]
    run_buttons(changed_tags, selected)
    return dict(zip(ids, table["name"], strict=True))


def run_buttons(changed_tags: list[tuple[int, list[str]]], selected: list[int]) -> None:
    """Save tags, archive, unarchive and delete (the last asks first, see `pending_runs`)."""
    buttons = st.columns(4)
    if buttons[0].button(
        "Save tags", disabled=not changed_tags, icon=":material/sell:", key="runs_save_tags"
    ):
        try:
            for run_id, tags in changed_tags:
                state.write(run_store.set_tags, run_id, tags)
        except RunChangeError as exc:
            st.error(str(exc))
        else:
            st.toast(f"Tags saved for {len(changed_tags)} run(s).")
            st.rerun()
    if buttons[1].button("Archive", disabled=not selected, icon=":material/archive:", key="runs_archive"):
        state.write(run_store.set_archived, selected, True)
        st.toast(f"{len(selected)} run(s) archived.")
        st.rerun()
    if buttons[2].button(
        "Unarchive", disabled=not selected, icon=":material/unarchive:", key="runs_unarchive"
    ):
        state.write(run_store.set_archived, selected, False)
        st.toast(f"{len(selected)} run(s) back.")
        st.rerun()
    if buttons[3].button("Delete…", disabled=not selected, icon=":material/delete:", key="runs_delete"):
        st.session_state["runs_pending_delete"] = selected


def confirm(removal, key: str, action) -> None:
    """Show what a delete removes, row counts per table, and do it only on a second, explicit click."""
    counts = ", ".join(f"{n:,} {what}" for what, n in removal.rows.items() if n)
    st.warning(
        f"Deleting {md(removal.what)} removes {removal.total:,} row(s): {counts}. This cannot be undone.",
        icon=":material/warning:",
    )
    yes, no = st.columns([1, 4])
    if yes.button("Delete for good", type="primary", key=f"{key}_yes"):
        action()
        st.session_state.pop(key, None)
        st.rerun()
    if no.button("Cancel", key=f"{key}_no"):
        st.session_state.pop(key, None)
        st.rerun()


def pending_runs(url: str, names: dict[int, str]) -> None:
    """The confirmation of a pending delete of the selected runs, if one is pending."""
    pending = [i for i in st.session_state.get("runs_pending_delete", []) if i in names]
    if pending:
        removal = state.run_removal(url, tuple(pending))

        def delete_runs():
            done = state.write(run_store.delete_runs, pending)
            st.toast(f"Deleted {done.total:,} row(s).")

        confirm(removal, "runs_pending_delete", delete_runs)


def ingested_files(url: str) -> None:
    """The files ingested so far, and undoing one of them (after a confirmation)."""
    st.subheader("Ingested files")
    files = state.ingested_files(url)
    if files.empty:
        st.info("No file ingested yet.")
        return
    st.caption(
        "Undoing an ingest deletes the file's benchmarks (with their gaps and alerts) and forgets the file, so "
        "it can be ingested again; runs and checkpoints it created stay (delete the run for those)."
    )
    tables.show(
        files.drop(columns=["id"]),
        hide_index=True,
        width="stretch",
        column_config={
            "path": st.column_config.TextColumn("file", width=360),
            "size_bytes": st.column_config.NumberColumn("bytes", format="%d"),
            "ingested_at": st.column_config.DatetimeColumn("ingested (UTC)", format="YYYY-MM-DD HH:mm"),
            "ingested_by": "by",
            "benchmarks": st.column_config.NumberColumn("benchmarks stored"),
        },
    )
    labels = {
        int(r["id"]): f"{r['path']} ({r['format']}, {r['ingested_at']:%Y-%m-%d %H:%M})"
        for r in files.to_dict("records")
    }
    pick = st.columns([4, 1], vertical_alignment="bottom")
    file_id = pick[0].selectbox("File", list(labels), format_func=lambda i: labels[i], key="runs_file")
    if pick[1].button("Undo this ingest…", icon=":material/undo:", key="runs_undo"):
        st.session_state["runs_pending_undo"] = file_id
    pending_file = st.session_state.get("runs_pending_undo")
    if pending_file in labels:
        removal = state.file_removal(url, pending_file)

        def undo():
            done, summary = state.write(edits.delete_ingested_file, pending_file)
            st.toast(f"Deleted {done.total:,} row(s); {summary.predictions} prediction(s) recomputed.")

        confirm(removal, "runs_pending_undo", undo)


render()
