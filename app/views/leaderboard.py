"""Leaderboard: which checkpoint is best, and does it match the model? Checkpoints ranked by measured (or
predicted) speedup over no speculation on a deployment and load, on one dataset or across datasets, each at
its best setting; one click from a row to its overlay on the Checkpoints page and to its alerts."""

import pandas as pd
import streamlit as st

from specdash.app import deploy_panel, state, tables, urlstate, widgets
from specdash.app.leaderboard_charts import leaderboard_figure
from specdash.app.text import md, number_text
from specdash.costmodel.domain import PredictionSource
from specdash.db.leaderboard import LeaderboardFilter
from specdash.labels import gap_text, setting_label

EVERY_DEPLOYMENT = "every deployment"
EVERY_LOAD = "every load"
ACROSS = "across datasets"
RANK_BY = {"measured": "measured speedup", "predicted": "predicted speedup"}
PAGE_ROWS = 50


def render() -> None:
    url = state.db_url()
    url_state = urlstate.UrlState("leaderboard")
    st.title("Leaderboard")
    st.caption(
        "Which checkpoint is best, and does it match the model? Speedup = decode tok/s over the "
        "no-speculation baseline of the same deployment, load and dataset, so datasets and deployments with "
        "different baselines compare fairly. Each checkpoint is shown at its best speculation setting."
    )
    choices = state.leaderboard_choices(url)
    if not choices["deployments"]:
        st.info(
            "Nothing to rank yet: the leaderboard needs speculative benchmarks of checkpoints. Upload "
            "benchmark results on the **Upload** page (SGLang, vLLM, SpecForge or SpecBundle files), or run "
            "`specdash demo`."
        )
        st.stop()
    flt = filters(url, url_state, choices)
    st.subheader("Deploy: the winner on each deployment and load")
    deploy_panel.show(url, flt, "leaderboard_deploy")
    st.subheader(f"Ranking by {RANK_BY[flt.rank_by]}")
    total = state.leaderboard_size(url, flt)
    if not total:
        st.info(
            "No checkpoint was benchmarked with this selection: choose another deployment, load or dataset."
        )
        st.stop()
    top = ranking_chart(url, flt, total)
    links_to(ranking_table(url, flt, total, top.iloc[0]), flt)


def filters(url: str, url_state: urlstate.UrlState, choices: dict) -> LeaderboardFilter:
    """The deployment, load, dataset, prediction source and ranking menus, as the filter they choose."""
    deployment_names = {name: i for i, name in choices["deployments"]}
    sources = state.prediction_sources(url) or [PredictionSource.THEORY.value]
    row = st.columns([3, 1.5, 2, 1.4, 2])
    url_state.restore("leaderboard_deployment", "deployment", [EVERY_DEPLOYMENT, *deployment_names])
    deployment = row[0].selectbox(
        "Deployment", [EVERY_DEPLOYMENT, *deployment_names], key="leaderboard_deployment"
    )
    deployment_id = deployment_names.get(deployment)
    loads = sorted(
        {c for i, levels in choices["loads"].items() if deployment_id in (None, i) for c in levels}
    )
    load_options = [EVERY_LOAD, *loads] if len(loads) > 1 else loads
    widgets.follow("leaderboard_load", load_options, keep_by=deployment_id)
    url_state.restore(
        "leaderboard_load", "load", load_options, parse=lambda v: v if v == EVERY_LOAD else int(v)
    )
    load = row[1].selectbox(
        "Load",
        load_options,
        key="leaderboard_load",
        help="concurrency (requests decoded together): speedup falls as the batch grows, so entries "
        "compete at one load",
    )
    url_state.restore("leaderboard_dataset", "dataset", [ACROSS, *choices["datasets"]])
    dataset = row[2].selectbox("Dataset", [ACROSS, *choices["datasets"]], key="leaderboard_dataset")
    url_state.restore("leaderboard_source", "source", sources)
    if st.session_state.get("leaderboard_source") not in sources:
        # a calibrated prediction, once there is one, is the model's best word
        st.session_state["leaderboard_source"] = (
            PredictionSource.CALIBRATED.value if PredictionSource.CALIBRATED in sources else sources[0]
        )
    source = row[3].selectbox("Prediction", sources, key="leaderboard_source")
    url_state.restore("leaderboard_rank_by", "rank", list(RANK_BY))
    rank_by = row[4].radio(
        "Rank by", list(RANK_BY), format_func=RANK_BY.get, horizontal=True, key="leaderboard_rank_by"
    )
    url_state.publish("deployment", deployment, EVERY_DEPLOYMENT)
    url_state.publish("load", load, EVERY_LOAD)
    url_state.publish("dataset", dataset, ACROSS)
    url_state.publish("source", source)
    url_state.publish("rank", rank_by, "measured")

    return LeaderboardFilter(
        deployment_id=deployment_id,
        concurrency=None if load == EVERY_LOAD else int(load),
        dataset=None if dataset == ACROSS else dataset,
        source=source,
        rank_by=rank_by,
    )


def ranking_chart(url: str, flt: LeaderboardFilter, total: int) -> pd.DataFrame:
    """The first 30 entries, measured against predicted; returns them."""
    top = state.leaderboard(url, flt, 0, 30)
    shown = len(top)
    st.plotly_chart(leaderboard_figure(top, flt.source, shown), width="stretch", key="leaderboard_chart")
    st.caption(
        f"The first {shown} of {total:,} entries by {RANK_BY[flt.rank_by]}. Diamonds: measured; the other "
        f"marker: predicted by {md(flt.source)}, its bar the prediction's expected error where the cost "
        "model gives one; the dotted line is no speculation (1×). Hover for full names."
        + (" Across datasets: the mean of the per-dataset speedups." if flt.dataset is None else "")
    )
    return top


def ranking_table(url: str, flt: LeaderboardFilter, total: int, first: pd.Series) -> pd.Series:
    """A page of the ranking as a table; returns the row selected (the first entry when none is)."""
    # a page of the table at a time, read from the store: at scale the ranking has tens of thousands
    pages = max(1, -(-total // PAGE_ROWS))
    if st.session_state.get("leaderboard_page", 1) > pages:  # another selection has fewer pages
        st.session_state["leaderboard_page"] = pages
    page = st.number_input(f"Page (of {pages:,})", 1, pages, 1, key="leaderboard_page") if pages > 1 else 1
    rows = state.leaderboard(url, flt, (page - 1) * PAGE_ROWS, PAGE_ROWS)
    # shown as text: a checkpoint without a prediction from this source reads `-`, never `None`
    table = rows.assign(
        setting=rows.apply(setting_label, axis=1),
        measured_speedup=rows["measured_speedup"].map(lambda v: number_text(v, 2, "×")),
        predicted_speedup=rows["predicted_speedup"].map(lambda v: number_text(v, 2, "×")),
        gap=rows["gap"].map(gap_text),
        measured_tps=rows["measured_tps"].map(number_text),
        predicted_tps=rows["predicted_tps"].map(number_text),
    )
    columns = ["rank", "run", "checkpoint", "setting", "measured_speedup", "predicted_speedup", "gap"]
    columns += [
        "measured_tps",
        "predicted_tps",
        "datasets",
        "benchmarks",
        "open_alerts",
        "deployment",
        "concurrency",
    ]
    event = tables.show(
        table[columns],
        hide_index=True,
        width="stretch",
        on_select="rerun",
        selection_mode="single-row",
        key=f"leaderboard_table_{hash(flt)}_{page}",
        column_config={
            "rank": st.column_config.NumberColumn(width=50),
            "run": st.column_config.TextColumn(),  # as wide as its longest name (app/tables.py)
            "checkpoint": st.column_config.TextColumn(width=90),
            "setting": st.column_config.TextColumn("best setting", width=110),
            "measured_speedup": st.column_config.TextColumn("measured", width=80),
            "predicted_speedup": st.column_config.TextColumn("predicted", width=80),
            "gap": st.column_config.TextColumn("gap", width=70),
            "measured_tps": st.column_config.TextColumn("measured tok/s", width=100),
            "predicted_tps": st.column_config.TextColumn("predicted tok/s", width=100),
            "datasets": st.column_config.NumberColumn(width=70),
            "benchmarks": st.column_config.NumberColumn(width=85),
            "open_alerts": st.column_config.NumberColumn("open alerts", width=80),
            "deployment": st.column_config.TextColumn(),
            "concurrency": st.column_config.NumberColumn("load", width=50),
        },
    )
    st.caption(
        (f"Entries {rows['rank'].iloc[0]:,}-{rows['rank'].iloc[-1]:,} of {total:,}. " if pages > 1 else "")
        + "gap = 1 - measured / predicted: positive is slower than predicted. Select a row to open it."
    )
    return rows.iloc[event.selection.rows[0]] if event.selection.rows else first


def links_to(picked: pd.Series, flt: LeaderboardFilter) -> None:
    """The chosen entry, with links to its overlay on the Checkpoints page and to its alerts."""
    st.markdown(
        f"**#{int(picked['rank'])} {md(picked['run'])} / {md(picked['checkpoint'])}** on "
        f"{md(picked['deployment'])}, best at {setting_label(picked)}"
    )
    links = st.columns(2)
    links[0].page_link(
        "views/checkpoints.py",
        label="Overlay: predicted vs measured on the Checkpoints page",
        icon=":material/timeline:",
        query_params=urlstate.checkpoint_link(picked, None if flt.dataset is None else flt.dataset),
    )
    links[1].page_link(
        "views/alerts.py",
        label=f"Its alerts ({int(picked['open_alerts'])} open)",
        icon=":material/notification_important:",
        query_params={"run": str(picked["run"]), "deployment": str(picked["deployment"])},
    )


render()
