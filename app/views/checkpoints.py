"""Checkpoints: one run's predicted and measured throughput per checkpoint, overlaid."""

import streamlit as st

from specdash.app import charts, state

url = state.db_url()
st.title("Checkpoints")

runs = state.runs_frame(url)
if runs.empty:
    st.info("No runs yet: load some with `specdash ingest` or `specdash demo`.")
    st.stop()

run_names = runs["name"].tolist()
run_name = st.selectbox("Run", run_names, key="checkpoints_run")
run_id = int(runs.loc[runs["name"] == run_name, "id"].iloc[0])

deployments = state.deployments_frame(url)
deployment_name = st.selectbox("Deployment", ["all"] + deployments["name"].tolist(), key="checkpoints_deployment")
deployment_id = (
    None if deployment_name == "all"
    else int(deployments.loc[deployments["name"] == deployment_name, "id"].iloc[0])
)
frame = state.checkpoint_overlay(url, run_id, deployment_id)
if frame.empty:
    st.info("No benchmarks of this run on this deployment yet.")
    st.stop()

frame = frame.assign(setting=frame.apply(charts.setting_label, axis=1))
settings = charts.settings_by_coverage(frame)
setting = st.selectbox("Speculation setting (algorithm steps/topk/draft tokens)", settings,
                       key="checkpoints_setting")
selected = frame[frame["setting"] == setting]

left, right = st.columns(2)
left.plotly_chart(charts.overlay_figure(selected, "tps"), width="stretch")
right.plotly_chart(charts.overlay_figure(selected, "accept_length"), width="stretch")
st.dataframe(selected.drop(columns=["checkpoint_id"]), hide_index=True, width="stretch")
