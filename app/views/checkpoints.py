"""Checkpoints: pick runs and checkpoints, a deployment and a speculation setting; predicted (every source)
and measured tok/s and accept length per checkpoint, training curves, per-position acceptance, a table."""

import streamlit as st

from specdash.app import advisory_panel, charts, state
from specdash.db.checkpoint_queries import comparison_table

# More checkpoints than this on one axis stop being readable; the latest ones are preselected.
DEFAULT_CHECKPOINTS = 12
ALL_DATASETS = "all datasets"

url = state.db_url()
st.title("Checkpoints")
st.caption("Which checkpoint is better, and does it do what the cost model says?")

runs = state.runs_frame(url)  # runs without checkpoints too: a run in training has its curves and advice
if runs.empty:
    st.info(
        "No runs yet: load a run with `specdash ingest` or the **Upload** page, or run `specdash demo`."
    )
    st.stop()

run_names = runs["name"].tolist()
if "checkpoints_runs" not in st.session_state:
    # The run with the most checkpoints makes the most telling first view.
    st.session_state["checkpoints_runs"] = [
        runs.sort_values(["checkpoints", "name"], ascending=[False, True])["name"].iloc[0]
    ]
else:  # a run chosen earlier may be gone from another database
    st.session_state["checkpoints_runs"] = [n for n in st.session_state["checkpoints_runs"] if n in run_names]
top = st.columns([2, 3])
chosen_runs = top[0].multiselect("Runs", run_names, key="checkpoints_runs")
run_ids = tuple(int(i) for i in runs.loc[runs["name"].isin(chosen_runs), "id"])
if not run_ids:
    st.info("Choose at least one run.")
    st.stop()

checkpoints = state.checkpoints_frame(url, run_ids)
labels = {
    int(r.id): (r.name if len(run_ids) == 1 else f"{r.run} / {r.name}") for r in checkpoints.itertuples()
}
default = list(labels)[-DEFAULT_CHECKPOINTS:]
chosen = top[1].multiselect(
    "Checkpoints", list(labels), default=default, format_func=labels.get, key=f"checkpoints_ids_{run_ids}"
)
checkpoint_ids = tuple(chosen)
advisory_panel.run_section(url, run_ids)
if not checkpoint_ids:
    st.info("Choose at least one checkpoint." if labels else "No checkpoint saved yet for these runs.")

st.subheader("Throughput and acceptance per checkpoint")
deployments = state.benchmarked_deployments(url, checkpoint_ids)
comparison = None
if deployments.empty:
    st.info("None of these checkpoints has been benchmarked yet.")
else:
    pick = st.columns(3)
    deployment_name = pick[0].selectbox(
        "Deployment", deployments["name"].tolist(), key="checkpoints_deployment"
    )
    deployment_id = int(deployments.loc[deployments["name"] == deployment_name, "id"].iloc[0])
    settings = state.speculation_settings(url, checkpoint_ids, deployment_id)
    if not settings:
        st.info("Only no-speculation benchmarks on this deployment.")
    else:
        setting = pick[1].selectbox(
            "Speculation setting (algorithm steps/top-k/draft tokens)",
            settings,
            format_func=lambda s: s.label,
            key="checkpoints_setting",
        )
        datasets = state.benchmark_datasets(url, checkpoint_ids, deployment_id)
        dataset = pick[2].selectbox("Dataset", [ALL_DATASETS, *datasets], key="checkpoints_dataset")
        comparison = state.checkpoint_comparison(
            url, checkpoint_ids, deployment_id, setting, None if dataset == ALL_DATASETS else dataset
        )
        left, right = st.columns(2)
        left.plotly_chart(charts.overlay_figure(comparison, "tps"), width="stretch", key="checkpoints_tps")
        right.plotly_chart(
            charts.overlay_figure(comparison, "accept_length"), width="stretch", key="checkpoints_tau"
        )
        st.caption(
            "Diamonds: measured (mean, error bars one standard deviation over repeated benchmarks). Lines: "
            "predicted, one per source; hollow markers are extrapolated past the trained depth."
        )

st.subheader("Training")
keys = state.metric_keys(url, run_ids)
if not keys:
    st.info("No training metrics logged for these runs.")
else:
    loss_keys = [k for k in keys if "loss" in k.lower()] or keys
    acc_keys = [k for k in keys if "acc" in k.lower()]
    left, right = st.columns(2)
    with left:
        preferred = next(
            (k for k in loss_keys if k.lower().endswith("/loss") or k.lower() == "loss"), loss_keys[0]
        )
        loss_key = st.selectbox("Loss", loss_keys, index=loss_keys.index(preferred), key="checkpoints_loss")
        curves = state.training_curves(url, run_ids, (loss_key,))
        st.plotly_chart(
            charts.training_figure(curves, loss_key), width="stretch", key="checkpoints_loss_chart"
        )
    with right:
        chosen_acc = st.multiselect(
            "Accuracy per TTT position", acc_keys, default=acc_keys[:8], key=f"checkpoints_acc_{run_ids}"
        )
        curves = state.training_curves(url, run_ids, tuple(chosen_acc))
        st.plotly_chart(
            charts.training_figure(curves, "training accuracy", colour_by="key"),
            width="stretch",
            key="checkpoints_acc_chart",
        )
    st.caption(
        "Long runs are averaged into at most a few hundred buckets of steps in the database; the light band "
        "spans each bucket's min to max."
    )

left, right = st.columns(2)
with left:
    st.subheader("Acceptance per draft position")
    positions = state.position_acceptance(url, checkpoint_ids)
    st.plotly_chart(charts.acceptance_figure(positions), width="stretch", key="checkpoints_positions")
with right:
    st.subheader("Runs")
    st.dataframe(
        runs[runs["id"].isin(run_ids)][["name", "target_model", "ttt_length", "status", "checkpoints"]],
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

st.subheader("Table")
if comparison is None or comparison.empty:
    st.info("No benchmarks for this selection.")
else:
    table = comparison_table(comparison)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        key="checkpoints_table",
        column_config={
            c: st.column_config.NumberColumn(format="%.2f")
            for c in table.columns
            if c.startswith(("measured_", "predicted_"))
        },
    )
    st.download_button(
        "Download CSV",
        table.to_csv(index=False).encode(),
        file_name="checkpoints.csv",
        mime="text/csv",
        key="checkpoints_csv",
        icon=":material/download:",
    )
