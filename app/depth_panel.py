"""The Checkpoints page's "by draft depth" chart: one checkpoint's predicted tok/s at every draft depth on a
deployment and load (the deployment's load model, db/schedules.depth_curve: what its predictions at any load
use), with the prediction's band and what was measured at each depth (the What-if's overlay,
app/depth_overlay.py over db/depth_points.py), so a published drafter with one checkpoint reads as a curve
with its measurements, not as a single dot."""

import streamlit as st

from specdash.app import depth_overlay, state
from specdash.app.text import md
from specdash.app.whatif_charts import depth_figure
from specdash.costmodel import optimal_depth
from specdash.costmodel.uncertainty import prior_error_band

SHALLOWEST_CURVE = 8  # draft steps drawn at least, so the optimum and the fall after it show


def show(
    url: str,
    checkpoint: tuple[int, str],
    deployment: tuple[int, str],
    concurrency: int,
    topk: int | None,
    dataset: str | None,
) -> int:
    """Draw the chart for `checkpoint` and `deployment` ((id, name) each) at the setting's load and top-k;
    returns how many measured depths it drew."""
    (checkpoint_id, checkpoint_name), (deployment_id, deployment_name) = checkpoint, deployment
    topk = topk or 1
    measured = state.measured_by_depth(url, checkpoint_id, deployment_id, dataset)
    at_load = measured[(measured["concurrency"] == concurrency) & (measured["topk"].fillna(1) == topk)]
    deepest = max([SHALLOWEST_CURVE, *(at_load["num_steps"].astype(int) + 2)])
    curve = state.depth_curve(url, checkpoint_id, deployment_id, concurrency, topk, deepest, dataset)
    if curve is None:
        st.info(
            "No curve by depth: this checkpoint has neither training accuracies nor an accept length, or the "
            "deployment has no step time to predict from."
        )
        return 0
    figure = depth_figure(
        curve.points,
        optimal_depth(curve.points),
        curve.baseline_tps,
        f"{checkpoint_name} on {deployment_name}, concurrency {concurrency}",
        curve.depth,
        depth_label="trained depth" if curve.tau_source == "training" else "deepest measured",
    )
    band = state.effective_profile(url, deployment_id, concurrency).get("error_band") or prior_error_band(
        curve.tau_source
    )
    depth_overlay.add_band(figure, curve.points, band)
    drawn = depth_overlay.add_measured(figure, measured, concurrency, topk)
    st.plotly_chart(figure, width="stretch", key="checkpoints_depth_chart")
    model = f"calibrated set v{curve.version}" if curve.version is not None else "the priors"
    depths = ", ".join(f"K = {int(k)}" for k in at_load["num_steps"])
    st.caption(
        f"Line: the predicted tok/s at every draft depth under the deployment's load model ({model}), the "
        f"shaded band its expected error (±{band:.0%}); the acceptance per position is from "
        + ("training accuracies" if curve.tau_source == "training" else "the benchmarks' accept lengths")
        + ", hollow past what it holds for. "
        + (
            f"Diamonds: measured at {depths} ({md(dataset) if dataset else 'mean over datasets'}), top-k {topk}."
            if drawn
            else f"Nothing measured at concurrency {concurrency} and top-k {topk}."
        )
    )
    return drawn
