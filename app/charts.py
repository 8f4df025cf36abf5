"""Plotly figures of the Checkpoints page, and the styles and empty figure every page's figures share; plain
functions of query frames, testable without Streamlit (the Overview's figure is app/parity_charts.py).
Names from files go through plotly_text(): they are shown as text, never as markup."""

import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative

from specdash.app.text import abbreviate, plotly_text
from specdash.costmodel.domain import PredictionSource
from specdash.db.checkpoints import MEASURED_SOURCE_PREFIX

# D3 without its grey, which the "other runs" use
RUN_COLOURS = [c for c in qualitative.D3 if c.upper() != "#7F7F7F"]
SOURCE_DASH: dict[str, str] = {PredictionSource.THEORY: "solid", PredictionSource.CALIBRATED: "dash"}
# Sources are told apart by marker and colour, never colour alone; every colour reads on white and on
# Streamlit's dark background (black measured diamonds vanished in dark mode).
MEASURED_STYLE = {"symbol": "diamond", "color": "#e4572e"}
SOURCE_COLOURS: dict[str, str] = {PredictionSource.THEORY: "#4c78a8", PredictionSource.CALIBRATED: "#2ca02c"}
SOURCE_SYMBOLS: dict[str, str] = {PredictionSource.THEORY: "circle", PredictionSource.CALIBRATED: "square"}
EXTERNAL_COLOURS = ["#9467bd", "#bcbd22", "#e377c2", "#17becf"]
EXTERNAL_SYMBOLS = ["triangle-up", "x", "star", "cross"]
EMPTY_HEIGHT = 220


def empty_figure(message: str) -> go.Figure:
    """A figure that only says `message` (nothing to draw)."""
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


def checkpoint_labels(frame: pd.DataFrame) -> pd.Series:
    """Axis labels: `epoch_3` when one run is shown, `run / epoch_3` when several are; long names
    abbreviated (the hover has them in full, from full_checkpoint_names)."""
    checkpoints = abbreviate(frame["checkpoint"].astype(str), 18)
    if frame["run"].nunique() <= 1:
        return frame["checkpoint"].astype(str).map(checkpoints)
    runs = abbreviate(frame["run"].astype(str), 24)
    return frame["run"].astype(str).map(runs) + " / " + frame["checkpoint"].astype(str).map(checkpoints)


def full_checkpoint_names(frame: pd.DataFrame) -> pd.Series:
    return (frame["run"].astype(str) + " / " + frame["checkpoint"].astype(str)).map(plotly_text)


def _band(x: list, low: list, high: list, colour: str, group: str) -> go.Scatter:
    """A filled band between two lines over category positions (the prediction's expected error)."""
    return go.Scatter(
        x=[*x, *x[::-1]],
        y=[*high, *low[::-1]],
        fill="toself",
        mode="lines",  # its edges are not data: no markers (Plotly's default under 20 points)
        fillcolor=colour,
        opacity=0.18,
        line=dict(width=0),
        hoverinfo="skip",
        showlegend=False,
        legendgroup=group,
    )


def _add_predicted_lines(
    fig: go.Figure,
    group: pd.DataFrame,
    source: str,
    style: dict[str, str],
    runs: list,
    predicted_col: str,
    value: str,
    fmt: str,
) -> None:
    """One source's predictions: a line per run over its checkpoints (hollow markers where extrapolated),
    with a band for the expected error (error bars at a lone checkpoint) where it has one; the source is
    one legend entry."""
    in_legend = False
    for run in runs:
        line = group[group["run"] == run].dropna(subset=[predicted_col])
        if line.empty:
            continue
        x, y = line["label"].tolist(), line[predicted_col].astype(float).tolist()
        band = (
            line["error_band"].astype(float)
            if value == "tps" and "error_band" in line
            else pd.Series([float("nan")] * len(line), index=line.index)
        )
        has_band = bool(band.notna().any())
        if has_band and len(line) > 1:
            spread = band.fillna(0).tolist()
            fig.add_trace(
                _band(
                    x,
                    [v * (1 - b) for v, b in zip(y, spread, strict=True)],
                    [v * (1 + b) for v, b in zip(y, spread, strict=True)],
                    style["color"],
                    f"predicted {source}",
                )
            )
        open_symbol = style["symbol"] + "-open"
        fig.add_trace(
            go.Scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=f"predicted: {plotly_text(source)}",
                legendgroup=f"predicted {source}",
                showlegend=not in_legend,
                line=dict(dash=style["dash"], width=2, color=style["color"]),
                marker=dict(
                    symbol=[open_symbol if e else style["symbol"] for e in line["extrapolated"]],
                    size=9,
                    color=style["color"],
                    line=dict(width=1.5, color=style["color"]),
                ),
                error_y=dict(
                    type="data",
                    array=[v * b for v, b in zip(y, band.fillna(0), strict=True)],
                    visible=bool(has_band and len(line) == 1),
                    color=style["color"],
                )
                if has_band
                else None,
                customdata=list(
                    zip(
                        line["full"],
                        line["extrapolated"].map({True: " (extrapolated)", False: ""}),
                        (band.fillna(0) * 100).round(0) if has_band else [0] * len(line),
                        strict=True,
                    )
                ),
                hovertemplate=(
                    f"%{{customdata[0]}}: %{{y:{fmt}}}%{{customdata[1]}}"
                    + (" ± %{customdata[2]:.0f}%" if has_band else "")
                    + f"<extra>{plotly_text(source)}</extra>"
                ),
            )
        )
        in_legend = True


def overlay_figure(frame: pd.DataFrame, value: str = "tps") -> go.Figure:
    """Per checkpoint: measured (diamonds, error bars over repeated benchmarks) and predicted from every
    source (a line each, told apart by marker, colour and dash; hollow markers where the prediction is
    extrapolated; a band for the prediction's expected error where it has one)."""
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
        return empty_figure("No benchmarks for this selection")
    frame = frame.assign(label=checkpoint_labels(frame).map(plotly_text), full=full_checkpoint_names(frame))
    order = list(dict.fromkeys(frame["label"]))
    runs = list(dict.fromkeys(frame["run"]))
    fig = go.Figure()
    sources = sorted(set(frame["source"].dropna()), key=lambda s: (s not in SOURCE_COLOURS, s))
    external = [s for s in sources if s not in SOURCE_COLOURS]
    for source in sources:
        style = source_style(source, external)
        _add_predicted_lines(
            fig, frame[frame["source"] == source], source, style, runs, predicted_col, value, fmt
        )
    measured = frame.drop_duplicates("checkpoint_id").dropna(subset=[measured_col])
    if not measured.empty:
        fig.add_trace(
            go.Scatter(
                x=measured["label"],
                y=measured[measured_col],
                mode="markers",
                name="measured",
                marker=dict(size=12, symbol=MEASURED_STYLE["symbol"], color=MEASURED_STYLE["color"]),
                error_y=dict(type="data", array=measured[f"{measured_col}_std"].fillna(0), visible=True),
                customdata=list(zip(measured["full"], measured["n"], strict=True)),
                hovertemplate=f"%{{customdata[0]}}: %{{y:{fmt}}} (n=%{{customdata[1]}})<extra>measured</extra>",
            )
        )
    values = [frame[measured_col].max(), frame[predicted_col].max()]
    if value == "tps" and "error_band" in frame:
        values.append((frame[predicted_col] * (1 + frame["error_band"].fillna(0))).max())
    top = max(float(v) for v in values if pd.notna(v)) if any(pd.notna(v) for v in values) else 1.0
    fig.update_layout(
        yaxis=dict(title=unit, range=[0, top * 1.12]),  # from zero: a 1 % difference looks like 1 %
        height=420,
        margin=dict(t=10, l=10, r=10, b=10),
        # right of the plot, where Plotly keeps it clear of the ticks and axis titles (under it, it covered them)
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
    )
    fig.update_xaxes(
        categoryorder="array",
        categoryarray=order,
        type="category",
        automargin=True,
        tickangle=0 if len(order) <= 6 and max(map(len, order)) <= 14 else -35,
    )
    return fig


def smoothed(values: pd.Series, weight: float) -> pd.Series:
    """TensorBoard's and W&B's display smoothing: an exponential moving average with `weight` in [0, 1)
    (0: none), debiased so the first points are not pulled toward zero."""
    if weight <= 0 or values.empty:
        return values
    ema = values.ewm(alpha=1 - weight, adjust=True).mean()
    return ema


def training_figure(
    curves: pd.DataFrame, y_title: str, colour_by: str = "run", smoothing: float = 0.0, log_y: bool = False
) -> go.Figure:
    """Training metrics against step, one line per (run, key); where SQL bucketed the steps, a light band
    spans each bucket's min to max. With smoothing the raw line stays as a faint trace under the smoothed one;
    a log y axis for losses that fall by orders of magnitude."""
    if curves.empty:
        return empty_figure("No training metrics for this selection")
    fig = go.Figure()
    names = list(dict.fromkeys(curves[colour_by]))
    colours = run_colours(names)
    dashes = ["solid", "dash", "dot", "dashdot", "longdash"]
    runs = list(dict.fromkeys(curves["run"]))
    short_runs = abbreviate(runs, 24)
    for (run, key), line in curves.groupby(["run", "key"], sort=False):
        run, key = str(run), str(key)
        colour = colours[run if colour_by == "run" else key]
        label = plotly_text(key if len(runs) == 1 else f"{short_runs[run]} · {key}")
        full = plotly_text(f"{run} · {key}")
        dash = dashes[runs.index(run) % len(dashes)] if colour_by != "run" else "solid"
        if line["bucket_steps"].iloc[0] > 1 and not smoothing:
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
        if smoothing:
            fig.add_trace(
                go.Scatter(
                    x=line["step"],
                    y=line["value"],
                    mode="lines",
                    line=dict(color=colour, width=1),
                    opacity=0.25,
                    hoverinfo="skip",
                    showlegend=False,
                    legendgroup=label,
                )
            )
        fig.add_trace(
            go.Scatter(
                x=line["step"],
                y=smoothed(line["value"].astype(float).reset_index(drop=True), smoothing),
                mode="lines",
                name=label,
                legendgroup=label,
                line=dict(color=colour, dash=dash, width=1.8),
                hovertemplate="step %{x:.0f}: %{y:.4g}<extra>" + full + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title="training step",
        yaxis=dict(title=y_title, type="log" if log_y else "linear"),
        height=360,
        margin=dict(t=10, l=10, r=10, b=10),
        # right of the plot, where Plotly keeps it clear of the ticks and axis titles (under it, it covered them)
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
    )
    return fig


def acceptance_figure(frame: pd.DataFrame) -> go.Figure:
    """Conditional acceptance per draft position, one line per checkpoint: where a drafter loses tokens."""
    if frame.empty:
        return empty_figure("No per-position acceptance for these checkpoints")
    fig = go.Figure()
    frame = frame.assign(label=checkpoint_labels(frame).map(plotly_text))
    for label, line in frame.groupby("label", sort=False):
        # a curve implied by benchmarks (no training metrics) is dotted and says so
        measured = str(line["source"].iloc[0] or "").startswith(MEASURED_SOURCE_PREFIX)
        name = f"{label} (from benchmarks)" if measured else label
        fig.add_trace(
            go.Scatter(
                x=line["position"] + 1,
                y=line["rate"],
                mode="lines+markers",
                name=name,
                line=dict(dash="dot") if measured else None,
                hovertemplate="position %{x}: %{y:.3f}<extra>" + str(name) + "</extra>",
            )
        )
    fig.update_layout(
        xaxis_title="draft position (1 = first drafted token)",
        yaxis_title="acceptance given the previous ones",
        yaxis=dict(range=[0, 1]),
        xaxis=dict(dtick=1),
        height=360,
        margin=dict(t=10, l=10, r=10, b=10),
        # right of the plot, where Plotly keeps it clear of the ticks and axis titles (under it, it covered them)
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
    )
    return fig
