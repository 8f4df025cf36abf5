"""The Overview's figure: measured against predicted decode tok/s, a point per benchmark, with the gap
threshold's band around the diagonal; a plain function of the parity frame, testable without Streamlit.
Names from files go through plotly_text(): they are shown as text, never as markup."""

import pandas as pd
import plotly.graph_objects as go

from specdash.app.charts import empty_figure, run_colours
from specdash.app.text import abbreviate, plotly_text
from specdash.labels import setting_label

OTHER_COLOUR = "#b0b0b0"
# Past this many runs the parity legend would stop being readable: the rest share one grey colour.
MAX_COLOURED_RUNS = 8
# The characters of a legend entry: long names are abbreviated (full names on hover), so the legend never
# takes the plot's width.
LEGEND_WIDTH = 24
# Past this many points, WebGL keeps the browser responsive.
WEBGL_POINTS = 1500

PARITY_COLOUR_BY = ("run", "deployment", "dataset")


def parity_figure(
    frame: pd.DataFrame, threshold: float, height: int = 520, colour_by: str = "run"
) -> go.Figure:
    """Measured vs predicted tok/s, one point per benchmark coloured by run (or deployment, or dataset), with
    the ±threshold band; the largest groups get their own colour, the rest share grey."""
    if frame.empty:
        return empty_figure("No benchmark has a prediction yet")
    top = float(max(frame["predicted_tps"].max(), frame["measured_tps"].max())) * 1.08
    fig = go.Figure()
    _add_parity_band(fig, top, threshold)
    _add_parity_points(fig, frame, colour_by)
    fig.update_layout(
        xaxis_title="predicted decode tok/s (per request)",
        yaxis_title="measured decode tok/s (per request)",
        # both axes start at zero (a tok/s is never negative); equal scales keep the diagonal at 45°
        xaxis=dict(range=[0, top], rangemode="nonnegative", constrain="domain"),
        yaxis=dict(
            range=[0, top], rangemode="nonnegative", scaleanchor="x", scaleratio=1, constrain="domain"
        ),
        height=height,
        # right of the plot, where Plotly keeps it clear of the ticks and axis titles (under it, it covered them)
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
        margin=dict(t=10, l=10, r=10, b=10),
    )
    return fig


def _add_parity_band(fig: go.Figure, top: float, threshold: float) -> None:
    """The ±threshold band around the diagonal, and the diagonal itself (measured = predicted)."""
    xs = [0.0, top]
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
            fillcolor="rgba(44,160,44,0.15)",
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


def _add_parity_points(fig: go.Figure, frame: pd.DataFrame, colour_by: str) -> None:
    """The benchmarks, a trace per colour group: the largest groups by `colour_by` in their own colour, the
    rest in one grey trace; WebGL past WEBGL_POINTS points."""
    frame = frame.assign(
        setting=frame.apply(setting_label, axis=1),
        dataset=frame["dataset"].astype(object).where(frame["dataset"].notna(), "-"),
    )
    groups_of = frame[colour_by].astype(str)
    by_size = groups_of.value_counts()
    coloured = sorted(by_size.index[:MAX_COLOURED_RUNS])
    colours = run_colours(coloured)
    short = abbreviate(coloured, LEGEND_WIDTH)
    frame = frame.assign(colour_group=groups_of.where(groups_of.isin(coloured), None))
    scatter = go.Scattergl if len(frame) > WEBGL_POINTS else go.Scatter
    groups = [(name, frame[frame["colour_group"] == name]) for name in coloured]
    others = frame[frame["colour_group"].isna()]
    if not others.empty:
        groups.append((None, others))
    for name, group in groups:
        label = (
            plotly_text(short[name])
            if name is not None
            else f"{others[colour_by].nunique()} other {colour_by}s"
        )
        custom = pd.DataFrame(
            {
                "run": group["run"].map(plotly_text),
                "checkpoint": group["checkpoint"].map(plotly_text),
                "deployment": group["deployment"].map(plotly_text),
                "setting": group["setting"],
                "gap": group["gap"],
                "benchmark": group["benchmark_id"],
                "dataset": group["dataset"].map(plotly_text),
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
                    color=colours.get(name, OTHER_COLOUR),
                    line=dict(width=0.5, color="rgba(255,255,255,0.6)"),
                ),
                customdata=custom.to_numpy(),
                hovertemplate=(
                    "<b>%{customdata[0]} / %{customdata[1]}</b><br>%{customdata[2]}<br>%{customdata[3]}, "
                    "%{customdata[6]}<br>predicted %{x:.1f} tok/s<br>measured %{y:.1f} tok/s<br>gap "
                    "%{customdata[4]:+.1%}<br>benchmark %{customdata[5]}<extra></extra>"
                ),
            )
        )
