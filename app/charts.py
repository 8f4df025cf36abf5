"""Plotly figures built from query frames; plain functions, testable without Streamlit."""

import pandas as pd
import plotly.graph_objects as go

SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#1f77b4", None: "#7f7f7f"}


def setting_label(row) -> str:
    return f"{row['speculative_algorithm']} {row['num_steps']}/{row['topk']}/{row['num_draft_tokens']}"


def settings_by_coverage(frame: pd.DataFrame) -> list[str]:
    """Speculation settings, the one measured on the most checkpoints first."""
    coverage = frame.groupby("setting")["checkpoint"].nunique()
    return sorted(coverage.index, key=lambda s: (-coverage[s], s))


def parity_figure(frame: pd.DataFrame, threshold: float) -> go.Figure:
    """Measured vs predicted tok/s, one point per benchmark coloured by run, with the threshold band."""
    fig = go.Figure()
    if frame.empty:
        fig.update_layout(title="No benchmarks with predictions yet")
        return fig
    top = float(max(frame["predicted_tps"].max(), frame["measured_tps"].max())) * 1.1
    xs = [0.0, top]
    fig.add_trace(go.Scatter(x=xs, y=[x * (1 - threshold) for x in xs], mode="lines",
                             line=dict(width=0), hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=xs, y=[x * (1 + threshold) for x in xs], mode="lines", fill="tonexty",
                             fillcolor="rgba(44,160,44,0.12)", line=dict(width=0), hoverinfo="skip",
                             name=f"within ±{threshold:.0%}"))
    fig.add_trace(go.Scatter(x=xs, y=xs, mode="lines", line=dict(color="#2ca02c", dash="dash"),
                             name="measured = predicted", hoverinfo="skip"))
    frame = frame.assign(setting=frame.apply(setting_label, axis=1))
    for run, group in frame.groupby("run", sort=True):
        fig.add_trace(go.Scatter(
            x=group["predicted_tps"], y=group["measured_tps"], mode="markers", name=str(run),
            marker=dict(size=10, line=dict(width=1, color="white")),
            customdata=group[["checkpoint", "deployment", "setting", "gap", "benchmark_id"]].to_numpy(),
            hovertemplate=(
                "<b>%{customdata[0]}</b> (benchmark %{customdata[4]})<br>%{customdata[1]}<br>"
                "%{customdata[2]}<br>predicted %{x:.1f} tok/s<br>measured %{y:.1f} tok/s<br>"
                "gap %{customdata[3]:+.1%}<extra>%{fullData.name}</extra>"
            ),
        ))
    fig.update_layout(
        xaxis_title="predicted decode tok/s (per request)", yaxis_title="measured decode tok/s (per request)",
        xaxis=dict(range=[0, top]), yaxis=dict(range=[0, top]), height=520,
        legend=dict(orientation="h", y=-0.18), margin=dict(t=30),
    )
    return fig


def overlay_figure(frame: pd.DataFrame, value: str = "tps") -> go.Figure:
    """Predicted (one line per source) and measured (markers, error bars over repeats) per checkpoint."""
    measured_col, predicted_col, unit = (
        ("measured_tps", "predicted_tps", "decode tok/s (per request)") if value == "tps"
        else ("measured_accept_length", "predicted_accept_length", "accept length τ")
    )
    fig = go.Figure()
    if frame.empty:
        fig.update_layout(title="No benchmarks for this selection")
        return fig
    order = list(dict.fromkeys(frame.sort_values(["step", "checkpoint"], na_position="last")["checkpoint"]))
    measured = (
        frame.drop_duplicates("benchmark_id")
        .groupby("checkpoint")[measured_col].agg(["mean", "std", "count"]).reindex(order).dropna(subset=["mean"])
    )
    fig.add_trace(go.Scatter(
        x=measured.index, y=measured["mean"], mode="markers", name="measured",
        marker=dict(size=12, symbol="diamond", color="#111"),
        error_y=dict(type="data", array=measured["std"].fillna(0), visible=True),
        customdata=measured["count"], hovertemplate="%{x}: %{y:.2f} (n=%{customdata})<extra>measured</extra>",
    ))
    predicted = frame.dropna(subset=["source"])
    for source, group in predicted.groupby("source", sort=True):
        line = group.groupby("checkpoint")[predicted_col].mean().reindex(order).dropna()
        fig.add_trace(go.Scatter(x=line.index, y=line.values, mode="lines+markers", name=f"predicted: {source}",
                                 line=dict(dash="solid" if source == "theory" else "dot")))
    fig.update_layout(xaxis_title="checkpoint", yaxis_title=unit, height=420, margin=dict(t=30),
                      legend=dict(orientation="h", y=-0.25))
    fig.update_xaxes(categoryorder="array", categoryarray=order)
    return fig
