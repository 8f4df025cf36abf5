"""The Checkpoints page's "by draft depth" chart: one checkpoint's predicted tok/s at every draft depth on a
deployment and load (answers/depth.py: the depth curve every page and command answers with), with the
prediction's band and what was measured at each depth (the What-if's overlay, app/depth_overlay.py over
db/depth_points.py), so a published drafter with one checkpoint reads as a curve with its measurements,
not as a single dot."""

import streamlit as st

from specdash.app import depth_overlay, state
from specdash.app.text import md
from specdash.app.whatif_charts import depth_figure
from specdash.costmodel.domain import PredictionSource, TauSource
from specdash.costmodel.throughput import draft_width


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
    topk = draft_width(topk)
    measured = state.measured_by_depth(url, checkpoint_id, deployment_id, dataset)
    at_load = measured[(measured["concurrency"] == concurrency) & (measured["topk"].fillna(1) == topk)]
    curve = state.depth_curve(url, checkpoint_id, deployment_id, concurrency, topk, None, dataset)
    if curve is None:
        st.info(
            "No curve by depth: this checkpoint has neither training accuracies nor an accept length, or the "
            "deployment has no step time to predict from."
        )
        return 0
    trained = curve.tau_source == TauSource.TRAINING
    figure = depth_figure(
        curve.points,
        curve.best.depth_point(),
        curve.baseline_tps,
        # which load and dataset the curve answers for, on the chart itself
        f"{checkpoint_name} on {deployment_name}\nconcurrency {concurrency}, "
        + (f"dataset {dataset}" if dataset else "mean over datasets"),
        curve.depth,
        depth_label="trained depth" if trained else "deepest measured",
    )
    depth_overlay.add_band(figure, curve.points, curve.band)
    drawn = depth_overlay.add_measured(figure, measured, concurrency, topk)
    st.plotly_chart(figure, width="stretch", key="checkpoints_depth_chart")
    model = (
        f"calibrated set v{curve.version}" if curve.source == PredictionSource.CALIBRATED else "the priors"
    )
    depths = ", ".join(f"K = {int(k)}" for k in at_load["num_steps"])
    answers_for = (
        f"on dataset {md(dataset)} only (the Deploy view and `specdash schedule` answer across all datasets)"
        if dataset
        else "across all datasets, as the Deploy view and `specdash schedule` answer"
    )
    st.caption(
        f"Line: the predicted tok/s at every draft depth at concurrency {concurrency} {answers_for} ({model}), "
        "the shaded band its expected error "
        f"(±{curve.band:.0%}"
        + (", widened: never measured at this load" if curve.extrapolated_load else "")
        + "); the acceptance per position is from "
        + ("training accuracies" if trained else "the benchmarks' accept lengths")
        + ", hollow past what it holds for. "
        + (
            f"Diamonds: measured at {depths} ({md(dataset) if dataset else 'mean over datasets'}), top-k {topk}."
            if drawn
            else f"Nothing measured at concurrency {concurrency} and top-k {topk}."
        )
    )
    return drawn
