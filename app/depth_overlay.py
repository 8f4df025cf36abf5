"""What was measured, drawn on a predicted depth curve: the prediction's expected-error band around the
curve and one marker per benchmarked depth, so "does it behave as predicted" is read depth by depth."""

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

MEASURED_COLOUR = "#2ca02c"
# light enough to read on the dark theme, dark enough on the light one (WCAG contrast >= 1.3 on both)
BAND_COLOUR = "rgba(99, 160, 230, 0.35)"


def add_band(fig: go.Figure, points: Sequence, band: float | None) -> None:
    """The predicted tok/s ± the band (relative) as a shaded area behind the curve."""
    if not band or not points:
        return
    steps = [p.steps for p in points]
    upper = [p.tps * (1 + band) for p in points]
    lower = [p.tps * (1 - band) for p in points]
    fig.add_trace(
        go.Scatter(
            x=steps + steps[::-1],
            y=upper + lower[::-1],
            fill="toself",
            mode="lines",  # its edges are not data: no markers (Plotly's default under 20 points)
            fillcolor=BAND_COLOUR,
            line=dict(width=0),
            name=f"expected error ±{band:.0%}",
            hoverinfo="skip",
        )
    )


def add_measured(fig: go.Figure, measured: pd.DataFrame, concurrency: int, topk: int) -> int:
    """Benchmarks at `concurrency` and `topk` as diamonds at their depth K (mean of repeats); returns how many
    depths were drawn."""
    rows = measured[(measured["concurrency"] == concurrency) & (measured["topk"].fillna(1) == topk)]
    if rows.empty:
        return 0
    fig.add_trace(
        go.Scatter(
            x=rows["num_steps"].astype(int).tolist(),
            y=rows["measured_tps"].astype(float).tolist(),
            mode="markers",
            name=f"measured at concurrency {concurrency}",
            marker=dict(symbol="diamond", size=12, color=MEASURED_COLOUR, line=dict(width=1, color="#fff")),
            customdata=rows[["accept_length", "n"]].astype(float).fillna(0).values.tolist(),
            hovertemplate="K=%{x}: %{y:.1f} tok/s measured<br>τ %{customdata[0]:.2f}, "
            "%{customdata[1]:.0f} benchmark(s)<extra></extra>",
        )
    )
    return len(rows)


def rises(rates: Sequence[float]) -> list[int]:
    """1-based draft positions whose conditional acceptance is above the one before (a drafter's true rates
    do not rise with depth on the same prompts)."""
    return [i + 1 for i in range(1, len(rates)) if rates[i] > rates[i - 1] + 1e-9]


def rise_note(rates: Sequence[float], accept_lengths: dict[int, float]) -> str:
    """Why a measured-derived curve rises, in a sentence ('' when it does not)."""
    up = rises(rates)
    if not up:
        return ""
    depths = ", ".join(f"K = {k}" for k in accept_lengths)
    return (
        f" It rises at position{'s' if len(up) > 1 else ''} {', '.join(map(str, up))}: each rate is the constant "
        f"one that turns the accept length at one measured depth into the next ({depths}), and a larger gain "
        "between two deeper depths than between shallower ones reads as a higher rate. A drafter's true rates "
        "do not rise with depth; this is noise or a mix of datasets, so trust the curve near the measured "
        "depths and not the shape between them."
    )
