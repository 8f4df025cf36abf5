"""The Leaderboard's figure: speedup over no speculation per checkpoint, measured against predicted with the
prediction's error band; a plain function of the leaderboard frame, testable without Streamlit."""

import pandas as pd
import plotly.graph_objects as go

from specdash.app.charts import MEASURED_STYLE, source_style
from specdash.app.text import abbreviate, plotly_text
from specdash.labels import setting_label

# More rows than this stop being readable on one chart; the table below has them all.
CHART_ROWS = 30
ROW_PX = 26


def entry_labels(frame: pd.DataFrame) -> list[str]:
    """Axis labels: the run abbreviated, its checkpoint (left out for a published drafter's only one), and
    the deployment abbreviated when rows come from several and the run's own name does not already say it;
    the hover has the full names."""
    runs = abbreviate(frame["run"], 30)
    checkpoints = abbreviate(frame["checkpoint"], 16)
    several = frame["deployment"].nunique() > 1
    deployments = abbreviate(frame["deployment"], 24)
    labels = []
    for run, checkpoint, deployment in zip(
        frame["run"], frame["checkpoint"], frame["deployment"], strict=True
    ):
        label = runs[run] if checkpoint == "published" else f"{runs[run]} / {checkpoints[checkpoint]}"
        target = deployments[deployment]
        repeats = _letters(target) in _letters(runs[run])  # `Llama-3.1-8B · Llama-3.1-8B`
        labels.append(f"{label} · {target}" if several and not repeats else label)
    return labels


def _letters(name: str) -> str:
    """A name's letters and digits, lower case: `LLaMA3.1-8B` and `Llama-3.1-8B` read alike."""
    return "".join(c for c in name.lower() if c.isalnum())


def leaderboard_figure(frame: pd.DataFrame, source: str, rows: int = CHART_ROWS) -> go.Figure:
    """The first `rows` entries, best on top: measured speedup (diamond) and predicted (the source's
    marker, with the prediction's error band as a bar when it has one); the 1x line is no speculation."""
    top = frame.head(rows)
    fig = go.Figure()
    if top.empty:
        return fig
    labels = [plotly_text(label) for label in entry_labels(top)]
    hover = pd.DataFrame(
        {
            "name": [plotly_text(f"{r} / {c}") for r, c in zip(top["run"], top["checkpoint"], strict=True)],
            "deployment": top["deployment"].map(plotly_text),
            "setting": top.apply(setting_label, axis=1),
            "measured": top["measured_tps"],
            "predicted": top["predicted_tps"],
            "datasets": top["datasets"].astype("float64"),
        }
    ).to_numpy()
    fig.add_vline(x=1.0, line=dict(color="#888", dash="dot", width=1))
    style = source_style(source)
    band = (top["error_band"] * top["predicted_speedup"]).where(top["error_band"].notna())
    fig.add_trace(
        go.Scatter(
            x=top["predicted_speedup"],
            y=labels,
            mode="markers",
            name=f"predicted: {plotly_text(source)}",
            marker=dict(symbol=style["symbol"], size=11, color=style["color"], line=dict(width=2)),
            error_x=dict(
                type="data", array=band.fillna(0).tolist(), visible=bool(band.notna().any()), width=4
            ),
            customdata=hover,
            hovertemplate=(
                "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>%{customdata[2]}<br>predicted %{x:.2f}× "
                "(%{customdata[4]:.1f} tok/s)<extra></extra>"
            ),
        )
    )
    fig.add_trace(
        go.Scatter(
            x=top["measured_speedup"],
            y=labels,
            mode="markers",
            name="measured",
            marker=dict(symbol=MEASURED_STYLE["symbol"], size=13, color=MEASURED_STYLE["color"]),
            customdata=hover,
            hovertemplate=(
                "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>%{customdata[2]}<br>measured %{x:.2f}× "
                "(%{customdata[3]:.1f} tok/s, %{customdata[5]:.0f} dataset(s))<extra></extra>"
            ),
        )
    )
    highest = float(pd.concat([top["measured_speedup"], top["predicted_speedup"] + band.fillna(0)]).max())
    # speedups live above 1x: the axis starts just under the lowest point or 1x, not at 0
    lowest = float(pd.concat([top["measured_speedup"], top["predicted_speedup"] - band.fillna(0)]).min())
    start = max(0.0, min(lowest, 1.0) - 0.1)
    fig.update_layout(
        height=150 + ROW_PX * len(top),
        xaxis=dict(
            title="speedup over no speculation (×)", range=[start, max(highest * 1.05, 1.2)], side="top"
        ),
        yaxis=dict(autorange="reversed", automargin=True, type="category"),
        margin=dict(t=40, l=10, r=10, b=40),
        # under the plot: above it the legend covered the top axis's tick labels
        legend=dict(orientation="h", yanchor="top", y=-0.01, x=1, xanchor="right"),
    )
    return fig
