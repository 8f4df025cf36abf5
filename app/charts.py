"""Plotly figures of the Overview and Checkpoints pages, built from query frames; plain functions, testable
without Streamlit. Names from files go through plotly_text(): they are shown as text, never as markup."""

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from specdash.app.text import plotly_text
from specdash.labels import setting_label

SEVERITY_COLOURS = {"critical": "#d62728", "warning": "#ff7f0e", "info": "#1f77b4", "none": "#7f7f7f"}
RUN_COLOURS = qualitative.D3
OTHER_COLOUR = "#b0b0b0"
# Past this many runs the parity legend would stop being readable: the rest share one grey colour.
MAX_COLOURED_RUNS = 8
# Past this many points, WebGL keeps the browser responsive.
WEBGL_POINTS = 1500
SOURCE_DASH = {"theory": "solid", "calibrated": "dash"}
# Sources are told apart by marker and colour, never colour alone; every colour reads on white and on
# Streamlit's dark background (black measured diamonds vanished in dark mode).
MEASURED_STYLE = {"symbol": "diamond", "color": "#e4572e"}
SOURCE_COLOURS = {"theory": "#4c78a8", "calibrated": "#2ca02c"}
SOURCE_SYMBOLS = {"theory": "circle", "calibrated": "square"}
EXTERNAL_COLOURS = ["#9467bd", "#bcbd22", "#e377c2", "#17becf"]
EXTERNAL_SYMBOLS = ["triangle-up", "x", "star", "cross"]
EMPTY_HEIGHT = 220


def _empty(message: str) -> go.Figure:
    fig = go.Figure()
    fig.add_annotation(
        text=message,
        showarrow=False,
        font=dict(size=14, color="#666"),
        xref="paper",
        yref="paper",
        x=0.5,
        y=0.5,
    )
    fig.update_layout(
        height=EMPTY_HEIGHT, xaxis=dict(visible=False), yaxis=dict(visible=False), margin=dict(t=20, b=20)
    )
    return fig


def source_style(source: str, others: list[str] | None = None) -> dict:
    """Marker symbol, colour and line dash of a prediction source (external ones in a fixed order)."""
    if source in SOURCE_COLOURS:
        return {
            "symbol": SOURCE_SYMBOLS[source],
            "color": SOURCE_COLOURS[source],
            "dash": SOURCE_DASH[source],
        }
    external = sorted(others or [source])
    i = external.index(source) if source in external else 0
    return {
        "symbol": EXTERNAL_SYMBOLS[i % len(EXTERNAL_SYMBOLS)],
        "color": EXTERNAL_COLOURS[i % len(EXTERNAL_COLOURS)],
        "dash": "dot",
    }


def run_colours(runs: list[str]) -> dict[str, str]:
    return {run: RUN_COLOURS[i % len(RUN_COLOURS)] for i, run in enumerate(runs)}


def parity_figure(frame: pd.DataFrame, threshold: float, height: int = 520) -> go.Figure:
    """Measured vs predicted tok/s, one point per benchmark coloured by run, with the ±threshold band."""
    if frame.empty:
        return _empty("No benchmark has a prediction yet")
    top = float(max(frame["predicted_tps"].max(), frame["measured_tps"].max())) * 1.08
    xs = [0.0, top]
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[x * (1 - threshold) for x in xs],
            mode="lines",
            line=dict(width=0),
            hoverinfo="skip",
            showlegend=False,
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=[x * (1 + threshold) for x in xs],
            mode="lines",
            fill="tonexty",
            fillcolor="rgba(44,160,44,0.12)",
            line=dict(width=0),
            hoverinfo="skip",
            name=f"within ±{threshold:.0%}",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=xs,
            mode="lines",
            line=dict(color="#2ca02c", dash="dash", width=1),
            name="measured = predicted",
            hoverinfo="skip",
        )
    )
    frame = frame.assign(setting=frame.apply(setting_label, axis=1))
    by_size = frame["run"].value_counts()
    coloured = sorted(by_size.index[:MAX_COLOURED_RUNS])
    colours = run_colours(coloured)
    frame = frame.assign(colour_group=frame["run"].where(frame["run"].isin(coloured), None))
    scatter = go.Scattergl if len(frame) > WEBGL_POINTS else go.Scatter
    groups = [(run, frame[frame["colour_group"] == run]) for run in coloured]
    others = frame[frame["colour_group"].isna()]
    if not others.empty:
        groups.append((None, others))
    for run, group in groups:
        label = plotly_text(run) if run is not None else f"{others['run'].nunique()} other runs"
        custom = pd.DataFrame(
            {
                "run": group["run"].map(plotly_text),
                "checkpoint": group["checkpoint"].map(plotly_text),
                "deployment": group["deployment"].map(plotly_text),
                "setting": group["setting"],
                "gap": group["gap"],
                "benchmark": group["benchmark_id"],
            }
        )
        fig.add_trace(
            scatter(
                x=group["predicted_tps"],
                y=group["measured_tps"],
                mode="markers",
                name=label,
                marker=dict(
                    size=9 if len(frame) <= WEBGL_POINTS else 5,
                    color=colours.get(run, OTHER_COLOUR),
                    line=dict(width=1, color="white"),
                ),
                customdata=custom.to_numpy(),
                hovertemplate=(
                    "<b>%{customdata[0]} / %{customdata[1]}</b><br>%{customdata[2]}<br>%{customdata[3]}<br>"
                    "predicted %{x:.1f} tok/s<br>measured %{y:.1f} tok/s<br>gap %{customdata[4]:+.1%}"
                    "<br>benchmark %{customdata[5]}<extra></extra>"
                ),
            )
        )
    fig.update_layout(
        xaxis_title="predicted decode tok/s (per request)",
        yaxis_title="measured decode tok/s (per request)",
        xaxis=dict(range=[0, top]),
        yaxis=dict(range=[0, top], scaleanchor="x", scaleratio=1),
        height=height,
        legend=dict(orientation="h", yanchor="top", y=-0.14, x=0),
        margin=dict(t=10, l=10, r=10, b=10),
    )
    return fig


def checkpoint_labels(frame: pd.DataFrame) -> pd.Series:
    """`epoch_3` when one run is shown, `run / epoch_3` when several are."""
    if frame["run"].nunique() <= 1:
        return frame["checkpoint"].astype(str)
    return frame["run"].astype(str) + " / " + frame["checkpoint"].astype(str)


def overlay_figure(frame: pd.DataFrame, value: str = "tps") -> go.Figure:
    """Per checkpoint: measured (diamonds, error bars over repeated benchmarks, coloured by run) and
    predicted from every source (a line each; hollow markers where the prediction is extrapolated)."""
    measured_col, predicted_col, unit, fmt = (
        ("measured_tps", "predicted_tps", "decode tok/s (per request)", ".1f")
        if value == "tps"
        else (
            "measured_accept_length",
            "predicted_accept_length",
            "accept length τ (tokens per round)",
            ".2f",
        )
    )
    if frame.empty:
        return _empty("No benchmarks for this selection")
    frame = frame.assign(label=checkpoint_labels(frame).map(plotly_text))
    order = list(dict.fromkeys(frame["label"]))
    runs = list(dict.fromkeys(frame["run"]))
    colours = run_colours(runs)
    several_runs = len(runs) > 1
    fig = go.Figure()
    external = sorted(set(frame["source"].dropna()) - set(SOURCE_COLOURS))
    source_colours = {
        **SOURCE_COLOURS,
        **{s: EXTERNAL_COLOURS[i % len(EXTERNAL_COLOURS)] for i, s in enumerate(external)},
    }
    for source, group in frame.dropna(subset=["source"]).groupby("source", sort=True):
        in_legend = False
        for run in runs:
            line = group[group["run"] == run].dropna(subset=[predicted_col])
            if line.empty:
                continue
            symbols = ["circle-open" if x else "circle" for x in line["extrapolated"]]
            fig.add_trace(
                go.Scatter(
                    x=line["label"],
                    y=line[predicted_col],
                    mode="lines+markers",
                    name=f"predicted: {plotly_text(source)}",
                    legendgroup=f"predicted {source}",
                    showlegend=not in_legend,
                    line=dict(
                        dash=SOURCE_DASH.get(source, "dot"),
                        width=2,
                        color=colours[run] if several_runs else source_colours[source],
                    ),
                    marker=dict(symbol=symbols, size=8),
                    customdata=line["extrapolated"].map({True: " (extrapolated)", False: ""}),
                    hovertemplate=f"%{{x}}: %{{y:{fmt}}}%{{customdata}}<extra>{plotly_text(source)}</extra>",
                )
            )
            in_legend = True
    measured = frame.drop_duplicates("checkpoint_id").dropna(subset=[measured_col])
    for run in runs:
        points = measured[measured["run"] == run]
        if points.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=points["label"],
                y=points[measured_col],
                mode="markers",
                name=f"measured: {plotly_text(run)}" if several_runs else "measured",
                marker=dict(size=12, symbol="diamond", color=colours[run] if several_runs else "#111"),
                error_y=dict(type="data", array=points[f"{measured_col}_std"].fillna(0), visible=True),
                customdata=points["n"],
                hovertemplate=f"%{{x}}: %{{y:{fmt}}} (n=%{{customdata}})<extra>measured</extra>",
            )
        )
    fig.update_layout(
        yaxis_title=unit,
        height=400,
        margin=dict(t=10, l=10, r=10, b=10),
        legend=dict(orientation="h", yanchor="top", y=-0.2, x=0),
    )
    fig.update_xaxes(
        categoryorder="array",
        categoryarray=order,
        type="category",
        automargin=True,
        tickangle=0 if len(order) <= 6 and max(map(len, order)) <= 12 else -35,
    )
    return fig


def training_figure(curves: pd.DataFrame, y_title: str, colour_by: str = "run") -> go.Figure:
    """Training metrics against step, one line per (run, key); where SQL bucketed the steps, a light band
    spans each bucket's min to max."""
    if curves.empty:
        return _empty("No training metrics for this selection")
    fig = go.Figure()
    names = list(dict.fromkeys(curves[colour_by]))
    colours = run_colours(names)
    dashes = ["solid", "dash", "dot", "dashdot", "longdash"]
    runs = list(dict.fromkeys(curves["run"]))
    for (run, key), line in curves.groupby(["run", "key"], sort=False):
        colour = colours[run if colour_by == "run" else key]
        label = plotly_text(key if len(runs) == 1 else f"{run} · {key}")
        dash = dashes[runs.index(run) % len(dashes)] if colour_by != "run" else "solid"
        if line["bucket_steps"].iloc[0] > 1:
            fig.add_trace(
                go.Scatter(
                    x=pd.concat([line["step"], line["step"][::-1]]),
                    y=pd.concat([line["max"], line["min"][::-1]]),
                    fill="toself",
                    fillcolor=colour,
                    opacity=0.15,
                    line=dict(width=0),
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=label,
                )
            )
        fig.add_trace(
            go.Scatter(
                x=line["step"],
                y=line["value"],
                mode="lines",
                name=label,
                legendgroup=label,
                line=dict(color=colour, dash=dash, width=1.8),
                hovertemplate="step %{x:.0f}: %{y:.4g}<extra>" + label + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title="training step",
        yaxis_title=y_title,
        height=360,
        margin=dict(t=10, l=10, r=10, b=10),
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
    )
    return fig


def acceptance_figure(frame: pd.DataFrame) -> go.Figure:
    """Conditional acceptance per draft position, one line per checkpoint: where a drafter loses tokens."""
    if frame.empty:
        return _empty("No per-position acceptance for these checkpoints")
    fig = go.Figure()
    frame = frame.assign(label=checkpoint_labels(frame).map(plotly_text))
    for label, line in frame.groupby("label", sort=False):
        fig.add_trace(
            go.Scatter(
                x=line["position"] + 1,
                y=line["rate"],
                mode="lines+markers",
                name=label,
                hovertemplate="position %{x}: %{y:.3f}<extra>" + label + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title="draft position (1 = first drafted token)",
        yaxis_title="acceptance given the previous ones",
        yaxis=dict(range=[0, 1]),
        xaxis=dict(dtick=1),
        height=360,
        margin=dict(t=10, l=10, r=10, b=10),
        legend=dict(orientation="h", yanchor="top", y=-0.22, x=0),
    )
    return fig
