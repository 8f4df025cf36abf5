"""The Live page's figures: a drafter's windows over time against what its prediction expected (accept
length, per-position survival, tok/s); plain functions of the windows' frame, testable without Streamlit."""

import pandas as pd
import plotly.graph_objects as go

COLLAPSED = ("collapsed", "still collapsed")
MEASURED, PREDICTED, ALERT = "#1f77b4", "#ff7f0e", "#d62728"
HEIGHT = 300
# Past this many windows a marker per window merges into a band: lines alone read better.
MARKERS_UP_TO = 200


def _mode(frame: pd.DataFrame) -> str:
    return "lines+markers" if len(frame) <= MARKERS_UP_TO else "lines"


def _layout(fig: go.Figure, title: str, y_title: str, legend_x: float = 1.02) -> go.Figure:
    fig.update_layout(
        title=title,
        height=HEIGHT,
        margin=dict(t=40, b=30, l=50, r=10),
        xaxis_title=None,
        yaxis_title=y_title,
        # right of the plot, as on every page: under it, the legend covered the time axis's tick labels
        legend=dict(orientation="v", x=legend_x, xanchor="left", y=1, yanchor="top"),
    )
    return fig


def _measured(frame: pd.DataFrame, column: str, name: str) -> go.Figure:
    return go.Figure(
        go.Scatter(
            x=frame["measured_at"],
            y=frame[column],
            name=name,
            mode=_mode(frame),
            line=dict(color=MEASURED),
        )
    )


def _predicted(fig: go.Figure, frame: pd.DataFrame, column: str, name: str) -> None:
    predicted = frame[column]
    if predicted.notna().any():
        fig.add_trace(
            go.Scatter(
                x=frame["measured_at"],
                y=predicted,
                name=name,
                mode="lines",
                line=dict(color=PREDICTED, dash="dash"),
            )
        )


def accept_length_figure(frame: pd.DataFrame) -> go.Figure:
    """Measured accept length per window, the predicted one dashed, collapsed windows marked."""
    fig = _measured(frame, "accept_length", "measured accept length")
    _predicted(fig, frame, "predicted_accept_length", "predicted accept length")
    collapsed = frame[frame["acceptance"].isin(COLLAPSED)]
    if not collapsed.empty:
        fig.add_trace(
            go.Scatter(
                x=collapsed["measured_at"],
                y=collapsed["accept_length"],
                name="acceptance collapsed",
                mode="markers",
                marker=dict(color=ALERT, size=12, symbol="x"),
            )
        )
    return _layout(fig, "Accept length (tokens per round, bonus included)", "tokens / round")


def survival_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One column per draft position k: the share of rounds that kept the first k drafts, per window."""
    lists = [list(s) if isinstance(s, list) else [] for s in frame["position_survival"]]
    depth = max((len(s) for s in lists), default=0)
    columns = {f"s{k + 1}": [s[k] if k < len(s) else None for s in lists] for k in range(depth)}
    return pd.DataFrame(columns, index=frame["measured_at"])


def survival_figure(frame: pd.DataFrame) -> go.Figure:
    survival = survival_frame(frame)
    fig = go.Figure()
    for column in survival.columns:
        fig.add_trace(
            go.Scatter(
                x=survival.index,
                y=survival[column],
                name=f"position {column[1:]}",
                mode=_mode(frame),
            )
        )
    if survival.empty or not len(survival.columns):
        fig.add_annotation(
            text="the engine publishes no per-position acceptance (SGLang does not)",
            showarrow=False,
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
        )
    fig.update_yaxes(range=[0, 1])
    return _layout(fig, "Per-position survival (rounds that kept the first k drafts)", "share of rounds")


def tps_figure(frame: pd.DataFrame) -> go.Figure:
    """Per-request decode tok/s against the prediction; the server's aggregate tok/s on its own axis."""
    fig = _measured(frame, "decode_tps", "measured tok/s per request")
    _predicted(fig, frame, "predicted_tps", "predicted tok/s per request")
    if frame["output_throughput"].notna().any():
        fig.add_trace(
            go.Scatter(
                x=frame["measured_at"],
                y=frame["output_throughput"],
                name="aggregate tok/s (right axis)",
                mode="lines",
                line=dict(color="#7f7f7f", dash="dot"),
                yaxis="y2",
            )
        )
        fig.update_layout(yaxis2=dict(overlaying="y", side="right", title="aggregate tok/s", showgrid=False))
        # the legend right of the right axis's tick labels and title, not over them
        return _layout(fig, "Decode throughput", "tok/s per request", legend_x=1.1)
    return _layout(fig, "Decode throughput", "tok/s per request")
