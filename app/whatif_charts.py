"""The What-if page's figure and table: decode tok/s against draft depth for one deployment profile, from
the cost model's depth sweep; plain functions, testable without Streamlit."""

import pandas as pd
import plotly.graph_objects as go

from specdash.app.text import plotly_text

# the depth axis's top: the highest curve times this, so the optimum's label fits above its star
HEADROOM = 1.25


def depth_table(points) -> pd.DataFrame:
    """The numbers behind the chart, one row per draft depth K (DepthPoint rows of a depth sweep)."""
    return pd.DataFrame(
        [
            {
                "K": p.steps,
                "τ": p.accept_length,
                "break-even τ": p.break_even_accept_length,
                "round ms": p.round_ms,
                "tok/s": p.tps,
                "speedup": p.speedup,
                "extrapolated": p.extrapolated,
            }
            for p in points
        ]
    )


def depth_figure(
    points,
    best,
    baseline_tps: float,
    title: str,
    trained_depth: int | None = None,
    top_tps: float | None = None,
    depth_label: str = "trained depth",
) -> go.Figure:
    """tok/s per draft depth; the no-speculation line is the break-even; the optimum starred; depths past
    the trained one drawn hollow (their acceptance is extrapolated)."""
    fig = go.Figure()
    steps = [p.steps for p in points]
    fig.add_trace(
        go.Scatter(
            x=[steps[0] - 0.5, steps[-1] + 0.5],
            y=[baseline_tps, baseline_tps],
            mode="lines",
            line=dict(color="#d62728", dash="dash", width=1.5),
            name=f"break-even: no speculation, {baseline_tps:.0f} tok/s",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=steps,
            y=[p.tps for p in points],
            mode="lines+markers",
            name="predicted tok/s",
            line=dict(color="#1f77b4", width=2.5),
            marker=dict(size=8, symbol=["circle-open" if p.extrapolated else "circle" for p in points]),
            customdata=[[p.accept_length, p.break_even_accept_length, p.round_ms, p.speedup] for p in points],
            hovertemplate=(
                "K=%{x}: %{y:.1f} tok/s (%{customdata[3]:.2f}×)<br>τ %{customdata[0]:.2f}, break-even τ "
                "%{customdata[1]:.2f}<br>round %{customdata[2]:.2f} ms<extra></extra>"
            ),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[best.steps],
            y=[best.tps],
            mode="markers",
            name=f"optimum: K={best.steps}",
            marker=dict(symbol="star", size=18, color="#ff7f0e", line=dict(width=1, color="#333")),
            hoverinfo="skip",
        )
    )
    fig.add_annotation(optimum_label(best, steps))
    if trained_depth and trained_depth < steps[-1]:
        fig.add_vline(
            x=trained_depth + 0.5,
            line=dict(color="#888", dash="dot", width=1),
            annotation_text=f"{depth_label} {trained_depth}",
            annotation_position="bottom right",
        )
    fig.update_layout(
        # a line each: a long drafter, deployment and load ran past the chart's edge on one
        title=dict(text="<br>".join(plotly_text(line) for line in title.split("\n")), font=dict(size=15)),
        height=420,
        xaxis=dict(title="draft steps K (chain: K + 1 draft tokens)", dtick=1 if len(steps) <= 16 else 2),
        yaxis=dict(
            # headroom above the highest curve for the optimum's label
            title="decode tok/s (per request)",
            range=[0, (top_tps or max(p.tps for p in points)) * HEADROOM],
        ),
        margin=dict(t=30 + 20 * (title.count("\n") + 1), l=10, r=10, b=10),
        # right of the plot, where Plotly keeps it clear of the ticks and axis titles (under it, it covered them)
        legend=dict(orientation="v", x=1.02, xanchor="left", y=1, yanchor="top"),
    )
    return fig


def optimum_label(best, steps: list[int]) -> go.layout.Annotation:
    """The optimum's label, above its star and leaning into the plot (away from the nearer end of the depth
    axis), so it is never cut by the plot's edge nor runs into the axis."""
    leans_right = list(steps).index(best.steps) < len(steps) / 2 if best.steps in steps else True
    return go.layout.Annotation(
        x=best.steps,
        y=best.tps,
        xref="x",
        yref="y",
        text=f"K={best.steps}: {best.tps:.0f} tok/s ({best.speedup:.2f}×)",
        showarrow=True,
        arrowhead=0,
        arrowwidth=1,
        ax=24 if leans_right else -24,
        ay=-26,
        xanchor="left" if leans_right else "right",
        yanchor="bottom",
        font=dict(size=12),
        bgcolor="rgba(255, 127, 14, 0.18)",
        borderpad=2,
    )
