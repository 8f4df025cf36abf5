"""Checkpoints: pick runs and checkpoints, a deployment and a speculation setting; predicted (every source)
and measured tok/s and accept length per checkpoint, training curves, per-position acceptance, a table.
Every choice is in the URL (`?run=...&ckpt=...&deployment=...&setting=...&dataset=...`)."""

import re
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from specdash.app import advisory_panel, charts, depth_overlay, depth_panel, state, tables, urlstate, widgets
from specdash.app.comparison_table import comparison_table
from specdash.app.text import md
from specdash.costmodel.accuracies import accuracy_position
from specdash.costmodel.domain import SettingAtLoad
from specdash.db.checkpoints import MEASURED_SOURCE_PREFIX
from specdash.ingest.csvtext import spreadsheet_safe

# More checkpoints than this on one axis stop being readable; the latest ones are preselected.
DEFAULT_CHECKPOINTS = 12
ALL_DATASETS = "all datasets"
SMOOTHING = {0.0: "none", 0.6: "light", 0.9: "strong", 0.97: "heavy"}


@dataclass(frozen=True)
class Checkpoints:
    """The chosen runs and checkpoints, with the names the page shows for them."""

    run_ids: tuple[int, ...]
    labels: dict[int, str]  # every checkpoint of the runs: its name (run / name with several runs)
    full_names: dict[int, str]  # run / name
    chosen: tuple[int, ...]


@dataclass(frozen=True)
class Where:
    """The deployment, setting and dataset the comparison is on."""

    deployment_id: int
    deployment_name: str
    setting: SettingAtLoad
    dataset: str
    datasets: list[str]  # the datasets offered (the menu's choices but all)


def rise_notes(url: str, checkpoint_ids: tuple[int, ...], labels: dict[int, str]) -> str:
    """Why a measured-derived curve rises after falling, per checkpoint whose curve does."""
    notes = []
    for checkpoint_id in checkpoint_ids:
        measured = state.measured_acceptance(url, checkpoint_id, None)
        note = depth_overlay.rise_note(measured.rates, measured.accept_lengths) if measured.rates else ""
        if note:
            notes.append(f" **{md(labels[checkpoint_id])}**:{note}" if len(checkpoint_ids) > 1 else note)
    return "".join(notes)


def render() -> None:
    url = state.db_url()
    url_state = urlstate.UrlState("checkpoints")
    st.title("Checkpoints")
    st.caption("Which checkpoint is better, and does it do what the cost model says?")
    advisory_panel.keep_fresh(url)
    runs = state.runs_frame(url)  # runs without checkpoints too: a run in training has its curves and advice
    if runs.empty:
        st.info(
            "No runs yet: upload a training log or benchmark results on the **Upload** page (or `specdash "
            "ingest`), or run `specdash demo` to explore the example data."
        )
        st.stop()
    top = st.columns([2, 3])
    run_ids = choose_runs(url_state, runs, top[0])
    chosen = choose_checkpoints(url, url_state, run_ids, top[1])
    advisory_panel.run_section(url, run_ids)
    comparison, where = throughput_section(url, url_state, chosen)
    training_section(url, url_state, run_ids)
    acceptance_and_runs(url, runs, chosen)
    table_section(comparison, where)


def choose_runs(url_state: urlstate.UrlState, runs: pd.DataFrame, cell) -> tuple[int, ...]:
    """The runs menu (the run with the most checkpoints first); stops the page when none is chosen."""
    run_names = runs["name"].tolist()
    url_state.restore_many("checkpoints_runs", "run", run_names)
    if "checkpoints_runs" not in st.session_state:
        # The run with the most checkpoints makes the most telling first view.
        st.session_state["checkpoints_runs"] = [
            runs.sort_values(["checkpoints", "name"], ascending=[False, True])["name"].iloc[0]
        ]
    else:  # a run chosen earlier may be gone from another database
        st.session_state["checkpoints_runs"] = [
            n for n in st.session_state["checkpoints_runs"] if n in run_names
        ]
    chosen_runs = cell.multiselect(
        "Runs",
        run_names,
        key="checkpoints_runs",
        help="runs without checkpoints (e.g. imported from W&B) show their training curves",
    )
    url_state.publish("run", chosen_runs)
    run_ids = tuple(int(i) for i in runs.loc[runs["name"].isin(chosen_runs), "id"])
    if not run_ids:
        st.info("Choose at least one run.")
        st.stop()
    return run_ids


def choose_checkpoints(url: str, url_state: urlstate.UrlState, run_ids: tuple[int, ...], cell) -> Checkpoints:
    """The checkpoints menu of the chosen runs, the latest DEFAULT_CHECKPOINTS preselected."""
    checkpoints = state.checkpoints_frame(url, run_ids)
    labels: dict[int, str] = {
        int(i): (str(name) if len(run_ids) == 1 else f"{run} / {name}")
        for i, run, name in (
            zip(checkpoints["id"], checkpoints["run"], checkpoints["name"], strict=True)
            if len(checkpoints)
            else ()
        )
    }
    full_names = {
        int(i): f"{run} / {name}"
        for i, run, name in (
            checkpoints[["id", "run", "name"]].itertuples(index=False) if len(checkpoints) else ()
        )
    }
    checkpoint_key = f"checkpoints_ids_{run_ids}"
    url_state.restore_many(checkpoint_key, "ckpt", list(labels), parse=int)
    if checkpoint_key not in st.session_state:
        st.session_state[checkpoint_key] = list(labels)[-DEFAULT_CHECKPOINTS:]
    chosen = cell.multiselect(
        "Checkpoints", list(labels), format_func=lambda i: labels[i], key=checkpoint_key
    )
    url_state.publish("ckpt", chosen)
    if len(labels) > DEFAULT_CHECKPOINTS and len(chosen) == DEFAULT_CHECKPOINTS:
        cell.caption(f"The latest {DEFAULT_CHECKPOINTS} of {len(labels)} checkpoints are preselected.")
    return Checkpoints(run_ids, labels, full_names, tuple(chosen))


def throughput_section(
    url: str, url_state: urlstate.UrlState, chosen: Checkpoints
) -> tuple[pd.DataFrame | None, Where | None]:
    """Predicted against measured tok/s and accept length per checkpoint, then by draft depth; returns the
    comparison drawn and where it is (None, None when there is none)."""
    st.subheader("Throughput and acceptance per checkpoint")
    if not chosen.labels:
        st.info(
            "These runs have no checkpoints, only training metrics (below). A benchmark that names a "
            "checkpoint of the run (by path or `--run/--checkpoint`) adds one."
        )
        return None, None
    if not chosen.chosen:
        st.info("Choose at least one checkpoint.")
        return None, None
    deployments = state.benchmarked_deployments(url, chosen.chosen)
    if deployments.empty:
        st.info(
            "None of these checkpoints has been benchmarked yet: upload a benchmark result on the **Upload** "
            "page."
        )
        return None, None
    where = choose_where(url, url_state, chosen, deployments)
    if where is None:
        st.info("Only no-speculation benchmarks on this deployment.")
        return None, None
    comparison = state.checkpoint_comparison(
        url,
        chosen.chosen,
        where.deployment_id,
        where.setting,
        None if where.dataset == ALL_DATASETS else where.dataset,
    )
    overlay_charts(comparison, where)
    depth_section(url, chosen, where)
    return comparison, where


def choose_where(
    url: str, url_state: urlstate.UrlState, chosen: Checkpoints, deployments: pd.DataFrame
) -> Where | None:
    """The deployment, setting and dataset menus, each following the ones before it; None when the
    deployment has no speculative benchmark of these checkpoints."""
    run_ids, checkpoint_ids = chosen.run_ids, chosen.chosen
    pick = st.columns([3, 3, 2])
    deployment_names = deployments["name"].tolist()
    widgets.follow("checkpoints_deployment", deployment_names, reset_by=run_ids, keep_by=checkpoint_ids)
    url_state.restore("checkpoints_deployment", "deployment", deployment_names)
    deployment_name = pick[0].selectbox("Deployment", deployment_names, key="checkpoints_deployment")
    url_state.publish("deployment", deployment_name)
    deployment_id = int(deployments.loc[deployments["name"] == deployment_name, "id"].iloc[0])
    settings = state.speculation_settings(url, checkpoint_ids, deployment_id)
    if not settings:
        return None
    widgets.follow("checkpoints_setting", settings, reset_by=run_ids, keep_by=(checkpoint_ids, deployment_id))
    url_state.restore("checkpoints_setting", "setting", list(settings), parse=urlstate.setting_from_param)
    setting = pick[1].selectbox(
        "Speculation setting (algorithm steps/top-k/draft tokens)",
        settings,
        format_func=lambda s: s.label,
        key="checkpoints_setting",
    )
    url_state.publish("setting", urlstate.setting_param(vars(setting)))
    datasets = state.benchmark_datasets(url, checkpoint_ids, deployment_id)
    options = [*datasets, ALL_DATASETS] if datasets else [ALL_DATASETS]
    # across datasets by default: what the Deploy view, `specdash schedule` and the What-if answer for
    widgets.follow(
        "checkpoints_dataset",
        options,
        reset_by=run_ids,
        keep_by=(checkpoint_ids, deployment_id, setting),
        default=ALL_DATASETS,
    )
    url_state.restore("checkpoints_dataset", "dataset", options)
    dataset = pick[2].selectbox(
        "Dataset",
        options,
        key="checkpoints_dataset",
        help="datasets differ in baseline and acceptance (up to 2x): compare checkpoints on one",
    )
    url_state.publish("dataset", dataset)
    return Where(deployment_id, deployment_name, setting, dataset, list(datasets))


def overlay_charts(comparison: pd.DataFrame, where: Where) -> None:
    """Tok/s and accept length per checkpoint, measured against every prediction source."""
    # one under the other at the page's width (side by side each plot was ~300 px at 1400 px)
    left, right = st.container(), st.container()
    left.plotly_chart(charts.overlay_figure(comparison, "tps"), width="stretch", key="checkpoints_tps")
    right.plotly_chart(
        charts.overlay_figure(comparison, "accept_length"), width="stretch", key="checkpoints_tau"
    )
    st.caption(
        "Diamonds: measured (mean, error bars one standard deviation over repeated benchmarks). "
        "Lines: predicted, one per source (theory: circles, solid; calibrated: squares, dashed; external: "
        "dotted); hollow markers are extrapolated past the trained depth; the shaded band is the "
        "prediction's expected error."
        + (
            " All datasets: means over datasets whose baselines differ; the **Leaderboard** compares "
            "them by speedup."
            if where.dataset == ALL_DATASETS and len(where.datasets) > 1
            else ""
        )
    )


def depth_section(url: str, chosen: Checkpoints, where: Where) -> None:
    """One checkpoint (a menu when several are chosen, the latest first) by draft depth."""
    st.markdown("**By draft depth**: does it behave as predicted at every depth it was measured at?")
    checkpoint_ids = chosen.chosen
    depth_choice = checkpoint_ids[-1]
    if len(checkpoint_ids) > 1:
        widgets.follow(
            "checkpoints_depth_checkpoint",
            checkpoint_ids,
            reset_by=chosen.run_ids,
            keep_by=checkpoint_ids,
            default=checkpoint_ids[-1],
        )
        depth_choice = st.selectbox(
            "Checkpoint",
            checkpoint_ids,
            format_func=lambda i: chosen.labels[i],
            key="checkpoints_depth_checkpoint",
        )
    depth_panel.show(
        url,
        (int(depth_choice), chosen.full_names[depth_choice]),
        (where.deployment_id, where.deployment_name),
        int(where.setting.concurrency),
        where.setting.topk,
        None if where.dataset == ALL_DATASETS else where.dataset,
    )


def training_section(url: str, url_state: urlstate.UrlState, run_ids: tuple[int, ...]) -> None:
    """Loss and per-position accuracy over training steps, smoothed or on a log scale."""
    st.subheader("Training")
    keys = state.metric_keys(url, run_ids)
    if not keys:
        st.info(
            "No training metrics logged for these runs: upload the SpecForge training log or a W&B/MLflow "
            "export on the **Upload** page."
        )
        return
    loss_keys = [k for k in keys if "loss" in k.lower()] or keys
    acc_keys = sorted((k for k in keys if "acc" in k.lower()), key=position)
    controls = st.columns([1, 1, 4])
    url_state.restore("checkpoints_smoothing", "smooth", list(SMOOTHING), parse=float)
    smoothing = float(
        controls[0].selectbox(
            "Smoothing", list(SMOOTHING), format_func=lambda v: SMOOTHING[v], key="checkpoints_smoothing"
        )
        or 0.0
    )
    url_state.publish("smooth", smoothing, 0.0)
    url_state.restore("checkpoints_log", "log", [True, False], parse=lambda v: v == "1")
    log_y = controls[1].toggle("Log-scale loss", key="checkpoints_log")
    url_state.publish("log", "1" if log_y else None)
    left, right = st.columns(2)
    with left:
        loss_chart(url, url_state, run_ids, loss_keys, smoothing, log_y)
    with right:
        accuracy_chart(url, url_state, run_ids, acc_keys, smoothing)
    st.caption(
        "Long runs are averaged into at most a few hundred buckets of steps in the database; the light band "
        "spans each bucket's min to max (with smoothing, the raw line is drawn faintly instead)."
    )


def position(key: str) -> tuple:
    """An accuracy key's sort order: its name, then the draft position it ends with."""
    match = re.search(r"(\d+)$", key)
    return (key.rsplit("_", 1)[0], int(match.group(1)) if match else -1)


def loss_chart(
    url: str,
    url_state: urlstate.UrlState,
    run_ids: tuple[int, ...],
    loss_keys: list[str],
    smoothing: float,
    log_y: bool,
) -> None:
    preferred = next(
        (k for k in loss_keys if k.lower().endswith("/loss") or k.lower() == "loss"), loss_keys[0]
    )
    url_state.restore("checkpoints_loss", "loss", loss_keys)
    if st.session_state.get("checkpoints_loss") not in loss_keys:
        st.session_state["checkpoints_loss"] = preferred
    loss_key = st.selectbox("Loss", loss_keys, key="checkpoints_loss") or preferred
    url_state.publish("loss", loss_key)
    curves = state.training_curves(url, run_ids, (loss_key,))
    st.plotly_chart(
        charts.training_figure(curves, loss_key, smoothing=smoothing, log_y=log_y),
        width="stretch",
        key="checkpoints_loss_chart",
    )


def accuracy_chart(
    url: str, url_state: urlstate.UrlState, run_ids: tuple[int, ...], acc_keys: list[str], smoothing: float
) -> None:
    # per-position training accuracy (train/acc_0, train/acc_1, ...) of every chosen run, in position
    # order; other accuracy keys (epoch averages, eval) are offered but not preselected
    per_position = [k for k in acc_keys if accuracy_position(k) is not None]
    acc_key = f"checkpoints_acc_{run_ids}"
    url_state.restore_many(acc_key, "acc", acc_keys)
    if acc_key not in st.session_state:
        st.session_state[acc_key] = per_position or acc_keys[:8]
    chosen_acc = st.multiselect("Accuracy per TTT position", acc_keys, key=acc_key)
    url_state.publish("acc", chosen_acc)
    curves = state.training_curves(url, run_ids, tuple(chosen_acc))
    st.plotly_chart(
        charts.training_figure(curves, "training accuracy", colour_by="key", smoothing=smoothing),
        width="stretch",
        key="checkpoints_acc_chart",
    )


def acceptance_and_runs(url: str, runs: pd.DataFrame, chosen: Checkpoints) -> None:
    """Acceptance per draft position of the chosen checkpoints, beside the chosen runs."""
    left, right = st.columns(2)
    with left:
        st.subheader("Acceptance per draft position")
        positions = state.position_acceptance(url, chosen.chosen, from_benchmarks=True)
        st.plotly_chart(charts.acceptance_figure(positions), width="stretch", key="checkpoints_positions")
        if positions["source"].astype(str).str.startswith(MEASURED_SOURCE_PREFIX).any():
            st.caption(
                "Dotted: a drafter without training accuracies, its acceptance per position implied by its "
                "benchmarks (vLLM's per-position survival, else the accept lengths measured at several "
                "depths), as the What-if uses it." + rise_notes(url, chosen.chosen, chosen.labels)
            )
    with right:
        st.subheader("Runs")
        tables.show(
            runs[runs["id"].isin(chosen.run_ids)][
                ["name", "target_model", "ttt_length", "status", "checkpoints"]
            ],
            hide_index=True,
            width="stretch",
            column_config={
                "name": "run",
                "target_model": "target",
                "ttt_length": st.column_config.NumberColumn(
                    "TTT length",
                    help="draft positions the drafter was trained on; deeper speculation extrapolates",
                ),
            },
        )


def column_title(column: str) -> str:
    """A comparison table column's header: `predicted_tps_theory` reads `predicted tok/s (theory)`."""
    for prefix, name in (
        ("predicted_tps_", "predicted tok/s ({})"),
        ("gap_", "gap ({})"),
        ("predicted_accept_length_", "τ ({})"),
    ):
        if column.startswith(prefix):
            return name.format(column.removeprefix(prefix))
    return {
        "measured_tps": "measured tok/s",
        "measured_tps_std": "tok/s ± std",
        "n": "benchmarks",
        "measured_accept_length": "τ measured",
        "measured_accept_length_std": "τ ± std",
    }.get(column, column)


def table_section(comparison: pd.DataFrame | None, where: Where | None) -> None:
    """The comparison as a table, downloadable as CSV."""
    st.subheader("Table")
    if comparison is None or comparison.empty or where is None:
        st.info("No benchmarks for this selection.")
        return
    table = comparison_table(comparison)
    # what the page shows: numbers rounded, `-` where there is none (never `None`); the CSV keeps them whole
    shown = table.assign(**{c: table[c] * 100 for c in table.columns if c.startswith("gap_")})
    shown = shown.dropna(axis=1, how="all")  # e.g. no spread when every checkpoint was measured once
    config = {}
    for column in shown.columns:
        if column.startswith("gap_"):
            config[column] = st.column_config.NumberColumn(column_title(column), format="%+.1f%%")
        elif column.startswith(("measured_", "predicted_")):
            digits = "%.1f" if "_tps" in column else "%.2f"
            config[column] = st.column_config.NumberColumn(column_title(column), format=digits)
    config["n"] = st.column_config.NumberColumn("benchmarks", help="benchmarks averaged")
    tables.show(shown, hide_index=True, width="stretch", key="checkpoints_table", column_config=config)
    st.caption(
        f"Measured on {md(where.deployment_name)} at {md(where.setting.label)}. gap = 1 - measured / "
        "predicted: positive is slower than predicted."
    )
    st.download_button(
        "Download CSV",
        table.map(spreadsheet_safe).to_csv(index=False).encode(),
        file_name="checkpoints.csv",
        mime="text/csv",
        key="checkpoints_csv",
        icon=":material/download:",
    )


render()
