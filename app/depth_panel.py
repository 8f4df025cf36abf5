"""The Checkpoints page's "by draft depth" chart: one checkpoint's predicted tok/s at every draft depth on a
deployment and load, with the prediction's band and what was measured at each depth (the overlay the What-if
draws, app/depth_overlay.py over db/depth_points.py), so a published drafter with one checkpoint reads as a
curve with its measurements, not as a single dot."""

import streamlit as st

from specdash.app import depth_overlay, state
from specdash.app.text import md
from specdash.app.whatif_charts import depth_figure
from specdash.costmodel import CostParams, depth_sweep, optimal_depth
from specdash.costmodel.uncertainty import prior_error_band

SHALLOWEST_CURVE = 8  # draft steps drawn at least, so the optimum and the fall after it show


def acceptance_curve(url: str, checkpoint_id: int, dataset: str | None) -> tuple[list[float], str] | None:
    """The checkpoint's conditional acceptance per position and where it comes from (`training` acc_i,
    else `measured` from its benchmarks, as the What-if reads it); None when it has neither."""
    trained = state.position_acceptance(url, (checkpoint_id,))["rate"].tolist()
    if trained:
        return trained, "training"
    measured = state.measured_acceptance(url, checkpoint_id, dataset)
    return (list(measured.rates), "measured") if measured.rates else None


def profile_params(profile: dict) -> CostParams:
    """The costs of state.effective_profile (calibrated, else the profile with published priors)."""
    return CostParams(
        baseline_tps=float(profile["baseline_tps"]),
        comm_fraction=float(profile["comm_fraction"]),
        draft_step_ms=float(profile["draft_step_ms"]),
        round_overhead_ms=float(profile["round_overhead_ms"]),
        verify_growth_compute=float(profile["verify_growth_compute"]),
        verify_growth_comm=float(profile["verify_growth_comm"]),
    )


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
    curve = acceptance_curve(url, checkpoint_id, dataset)
    if curve is None:
        st.info("No acceptance curve for this checkpoint: neither training accuracies nor an accept length.")
        return 0
    rates, source = curve
    topk = topk or 1
    measured = state.measured_by_depth(url, checkpoint_id, deployment_id, dataset)
    at_load = measured[(measured["concurrency"] == concurrency) & (measured["topk"].fillna(1) == topk)]
    deepest = max([SHALLOWEST_CURVE, len(rates) + 2, *(at_load["num_steps"].astype(int) + 2)])
    profile = state.effective_profile(url, deployment_id, concurrency)
    points = depth_sweep(profile_params(profile), rates, deepest, topk)
    figure = depth_figure(
        points,
        optimal_depth(points),
        float(profile["baseline_tps"]),
        f"{checkpoint_name} on {deployment_name}, concurrency {concurrency}",
        len(rates),
        depth_label="trained depth" if source == "training" else "deepest measured",
    )
    band = profile.get("error_band") or prior_error_band(source)
    depth_overlay.add_band(figure, points, band)
    drawn = depth_overlay.add_measured(figure, measured, concurrency, topk)
    st.plotly_chart(figure, width="stretch", key="checkpoints_depth_chart")
    depths = ", ".join(f"K = {int(k)}" for k in at_load["num_steps"])
    st.caption(
        f"Line: the predicted tok/s at every draft depth from {md(profile['source'])}, the shaded band its "
        f"expected error (±{band:.0%}); the acceptance per position is from "
        + ("training accuracies" if source == "training" else "the benchmarks' accept lengths")
        + ". "
        + (
            f"Diamonds: measured at {depths} ({md(dataset) if dataset else 'mean over datasets'}), top-k {topk}."
            if drawn
            else f"Nothing measured at concurrency {concurrency} and top-k {topk}."
        )
    )
    return drawn
