"""The What-if page's depth x load heat map with the depth schedule drawn on it: plain functions over a
schedule's grid (answers.schedule.depth_load_grid), testable without Streamlit."""

import math
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from specdash.app.text import plotly_text

# loads spanning this ratio or more are drawn on a log axis (batches 1-16 otherwise pile up at one edge)
LOG_SPAN = 10


def load_label(concurrency: float) -> str:
    return f"{concurrency:g}"


def load_positions(loads: Sequence[float]) -> list[float]:
    """Where each load sits on the heat map's axis: log10 of it when the loads span decades, else itself."""
    if spans_decades(loads):
        return [math.log10(load) for load in loads]
    return [float(load) for load in loads]


def spans_decades(loads: Sequence[float]) -> bool:
    return bool(len(loads)) and max(loads) / min(loads) >= LOG_SPAN


def grid_frame(grid: Sequence[tuple[float, int, float]]) -> pd.DataFrame:
    """One row per (concurrency, depth): per-request tok/s and its share of the best depth at that load."""
    frame = pd.DataFrame(grid, columns=["concurrency", "K", "tok/s"])
    if frame.empty:
        return frame.assign(share=[])
    best = frame.groupby("concurrency")["tok/s"].transform("max")
    return frame.assign(share=frame["tok/s"] / best)


def schedule_heatmap(grid: Sequence[tuple[float, int, float]], entries, title: str) -> go.Figure:
    """Depth (rows, 0 = no speculation) x concurrency (columns): each cell's tok/s per request as a share
    of the best depth at that load; the schedule's depth at each load drawn as a line of markers."""
    frame = grid_frame(grid)
    loads = sorted(frame["concurrency"].unique()) if not frame.empty else []
    depths = sorted(frame["K"].unique()) if not frame.empty else []
    share = frame.pivot(index="K", columns="concurrency", values="share") if loads else pd.DataFrame()
    tps = frame.pivot(index="K", columns="concurrency", values="tok/s") if loads else pd.DataFrame()
    labels = [load_label(c) for c in loads]
    positions = load_positions(loads)
    at = dict(zip(loads, positions, strict=True))
    fig = go.Figure(
        go.Heatmap(
            x=positions,
            y=depths,
            z=share.values if loads else [],
            customdata=tps.values if loads else [],
            zmin=0.7,
            zmax=1.0,
            colorscale="Viridis",
            colorbar={"title": "of best", "tickformat": ".0%"},
            text=[labels] * len(depths),
            hovertemplate="B %{text}, K %{y}: %{customdata:.1f} tok/s per request (%{z:.1%} of the best)"
            "<extra></extra>",
        )
    )
    ordered = sorted(entries, key=lambda e: e.concurrency)
    fig.add_trace(
        go.Scatter(
            x=[at.get(e.concurrency, load_positions([e.concurrency])[0]) for e in ordered],
            y=[e.num_steps for e in ordered],
            text=[load_label(e.concurrency) for e in ordered],
            mode="lines+markers",
            name="schedule",
            line={"color": "white", "width": 2},
            marker={"symbol": "star", "size": 12, "color": "white", "line": {"color": "black", "width": 1}},
            hovertemplate="schedule at B %{text}: K %{y}<extra></extra>",
        )
    )
    fig.update_layout(
        # a line each (a long drafter and deployment ran past the chart's edge on one)
        title="<br>".join(plotly_text(line) for line in title.split("\n")),
        xaxis={
            "title": "concurrent requests (batch size B" + (", log scale)" if spans_decades(loads) else ")"),
            "tickvals": positions,
            "ticktext": labels,
        },
        yaxis={
            "title": "draft depth K (0: no speculation)",
            "dtick": 1,
            "tick0": 0,
            # the cells' own extent: no tick below no speculation (autorange drew a depth -1)
            "range": [min(depths) - 0.5, max(depths) + 0.5] if depths else None,
        },
        height=420,
        margin={"l": 10, "r": 10, "t": 30 + 22 * (title.count("\n") + 1), "b": 10},
        showlegend=False,
    )
    return fig


def context_heatmap(entries, title: str) -> go.Figure:
    """Context (rows) x batch (columns): the schedule's depth in each cell (0: no speculation), coloured by
    its predicted speedup over the plain step; extrapolated cells say so on hover."""
    loads = sorted({e.concurrency for e in entries})
    contexts = sorted({e.context_tokens for e in entries if e.context_tokens is not None})
    cell = {(e.context_tokens, e.concurrency): e for e in entries}
    rows = [[cell.get((c, b)) for b in loads] for c in contexts]
    positions = load_positions(loads)
    fig = go.Figure(
        go.Heatmap(
            x=positions,
            y=[f"{c:,.0f}" for c in contexts],
            z=[[e.speedup if e else None for e in row] for row in rows],
            text=[[f"K={e.num_steps}" if e else "" for e in row] for row in rows],
            texttemplate="%{text}",
            customdata=[
                [
                    [load_label(e.concurrency), e.tok_s, "yes" if e.extrapolated else "no"] if e else None
                    for e in row
                ]
                for row in rows
            ],
            colorscale="Viridis",
            zmin=1.0,
            colorbar={"title": "speedup", "ticksuffix": "×"},
            hovertemplate="B %{customdata[0]}, context %{y}: %{text}, %{customdata[1]:.1f} tok/s per request, "
            "%{z:.2f}× (extrapolated: %{customdata[2]})<extra></extra>",
        )
    )
    fig.update_layout(
        title="<br>".join(plotly_text(line) for line in title.split("\n")),
        xaxis={
            "title": "concurrent requests (batch size B" + (", log scale)" if spans_decades(loads) else ")"),
            "tickvals": positions,
            "ticktext": [load_label(b) for b in loads],
        },
        # a short title: a long one ran past a four-row plot into the chart's title
        yaxis={"title": "context (tokens)", "type": "category"},
        height=160 + 44 * max(len(contexts), 3),
        margin={"l": 10, "r": 10, "t": 30 + 22 * (title.count("\n") + 1), "b": 10},
    )
    return fig


def schedule_frame(entries) -> pd.DataFrame:
    """The schedule's rows as the page's table shows them (with their context when one was asked)."""
    frame = pd.DataFrame(
        [
            {
                "context": e.context_tokens,
                "concurrency": e.concurrency,
                "K": e.num_steps,
                "τ": e.accept_length,
                "tok/s per request": e.tok_s,
                "aggregate tok/s": e.aggregate_tok_s,
                "speedup": e.speedup,
                "baseline": "estimated" if e.baseline_estimated else "measured or stated",
                "extrapolated": e.extrapolated,
            }
            for e in entries
        ]
    )
    if frame.empty or frame["context"].isna().all():
        return frame.drop(columns=["context"], errors="ignore")
    return frame
