"""The Alerts page's figure: a gap as a waterfall from predicted to measured tok/s; a plain function of the
alert's stored decomposition, testable without Streamlit."""

import plotly.graph_objects as go


def waterfall_steps(alert: dict) -> list[tuple[str, float, str]]:
    """(label, tok/s, kind) bars: the prediction, the acceptance effect, the round-time effect, the
    measurement. measured / predicted = acceptance_factor * round_factor, so the acceptance bar moves the
    prediction by its factor and the round-time bar takes it the rest of the way to the measurement.
    Without a measured accept length the gap is one unsplit bar."""
    predicted, measured = alert["predicted_tps"], alert["measured_tps"]
    acceptance, round_factor = alert.get("acceptance_factor"), alert.get("round_factor")
    if acceptance is None or round_factor is None or acceptance != acceptance:  # None or NaN
        return [
            ("predicted", predicted, "absolute"),
            ("gap (no measured accept length to split it)", measured - predicted, "relative"),
            ("measured", measured, "total"),
        ]
    after_acceptance = predicted * acceptance
    return [
        ("predicted", predicted, "absolute"),
        ("acceptance effect", after_acceptance - predicted, "relative"),
        ("round-time effect", measured - after_acceptance, "relative"),
        ("measured", measured, "total"),
    ]


def _axis_labels(alert: dict, steps: list[tuple[str, float, str]]) -> list[str]:
    """Bar names, the two effects with the accept lengths and round times behind them."""
    labels = [label for label, _, _ in steps]
    if len(steps) == 4:
        labels[1] += f"<br>τ {alert['measured_accept_length']:.2f} vs {alert['predicted_accept_length']:.2f}"
        labels[2] += f"<br>{alert['measured_round_ms']:.1f} vs {alert['predicted_round_ms']:.1f} ms a round"
    return labels


def waterfall_figure(alert: dict) -> go.Figure:
    steps = waterfall_steps(alert)
    fig = go.Figure(
        go.Waterfall(
            x=_axis_labels(alert, steps),
            y=[value for _, value, _ in steps],
            measure=[kind for _, _, kind in steps],
            text=[f"{value:+.1f}" if kind == "relative" else f"{value:.1f}" for _, value, kind in steps],
            textposition="outside",
            textfont=dict(size=13),
            cliponaxis=False,
            connector=dict(line=dict(color="#999", dash="dot")),
            increasing=dict(marker=dict(color="#2ca02c")),
            decreasing=dict(marker=dict(color="#d62728")),
            totals=dict(marker=dict(color="#444")),
            hovertemplate="%{x}: %{y:+.1f} tok/s<extra></extra>",
        )
    )
    top = max(alert["predicted_tps"], alert["measured_tps"]) * 1.2
    fig.update_layout(
        yaxis_title="decode tok/s (per request)",
        yaxis=dict(range=[0, top]),
        height=400,
        xaxis=dict(tickangle=0, tickfont=dict(size=11)),
        margin=dict(t=30, l=10, r=10, b=10),
        showlegend=False,
    )
    return fig
