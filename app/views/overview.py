"""Overview: what is stored, the open alerts, predicted vs measured for every benchmark, and where each
run's latest checkpoint stands."""

import pandas as pd
import streamlit as st

from specdash.app import (
    advisory_panel,
    alert_cards,
    deploy_panel,
    parity_charts,
    state,
    tables,
    urlstate,
    widgets,
)
from specdash.app.text import SEVERITY_ICONS, number_text
from specdash.costmodel.domain import PredictionSource
from specdash.db.alerts import SEVERITIES
from specdash.db.leaderboard import LeaderboardFilter
from specdash.labels import setting_label

ALERTS_SHOWN = 5
INFO_SHOWN = 20
LATEST_COLUMNS = [
    "run",
    "status",
    "checkpoints",
    "latest_checkpoint",
    "best_speedup",
    "measured_tps",
    "setting",
    "deployment",
]


def render() -> None:
    url = state.db_url()
    state.follow_store(url)
    st.title("Overview")
    st.caption(
        "Predicted vs measured decode throughput of speculative-decoding drafters, and the gaps between them."
    )
    advisory_panel.keep_fresh(url)

    counts = state.counts(url)
    by_severity = state.open_alert_counts(url)
    threshold = state.gap_threshold(url)
    stored(counts, by_severity)
    if not counts["benchmarks"] and not counts["runs"]:
        st.info("Nothing stored yet: upload a benchmark file on the **Upload** page, or run `specdash demo`.")
        st.stop()

    sources = state.prediction_sources(url)
    # the prediction that judges the alerts is the one to look at first: calibrated once there is one, else
    # theory (an external one judges only the few benchmarks it covers)
    judging = (
        next(
            (s.value for s in (PredictionSource.CALIBRATED, PredictionSource.THEORY) if s in sources),
            sources[0],
        )
        if sources
        else PredictionSource.THEORY.value
    )
    st.subheader("Deploy: the checkpoint to serve on each deployment and load")
    deploy_panel.show(url, LeaderboardFilter(source=judging), "overview_deploy")

    # one under the other: beside the alerts the parity plot had ~230 px, its legend as wide
    left, right = st.container(), st.container()
    with left:
        parity(url, sources, judging, threshold)
    with right:
        open_alerts(url, by_severity, threshold)
    latest_checkpoints(url, counts["runs"])


def stored(counts: dict, by_severity: dict) -> None:
    """How much is stored, and how many alerts are open."""
    cols = st.columns(6)
    cols[0].metric("Runs", counts["runs"])
    cols[1].metric("Checkpoints", counts["checkpoints"])
    cols[2].metric("Benchmarks", counts["benchmarks"])
    cols[3].metric("Deployments", counts["deployments"])
    cols[4].metric("Open alerts", sum(by_severity.values()))
    cols[5].metric("Critical", by_severity.get("critical", 0))


def parity(url: str, sources: list[str], judging: str, threshold: float) -> None:
    """Predicted vs measured tok/s of every benchmark (or a sample), under a chosen prediction source."""
    st.subheader("Predicted vs measured")
    if not sources:
        st.info("No benchmark has a prediction yet: predictions need a checkpoint and a deployment profile.")
        return
    url_state = urlstate.UrlState("overview")
    widgets.follow("overview_source", sources, reset_by=judging, default=judging)
    url_state.restore("overview_source", "source", sources)
    url_state.restore("overview_colour", "colour", parity_charts.PARITY_COLOUR_BY)
    pick = st.columns(2)
    source = (
        pick[0].selectbox("Prediction source", sources, key="overview_source")
        if len(sources) > 1
        else sources[0]
    )
    colour_by = pick[1].selectbox("Colour by", parity_charts.PARITY_COLOUR_BY, key="overview_colour")
    url_state.publish("source", source, judging)
    url_state.publish("colour", colour_by, "run")
    frame, total = state.parity(url, source)
    st.plotly_chart(
        parity_charts.parity_figure(frame, threshold, height=620, colour_by=colour_by),
        width="stretch",
        key="overview_parity",
    )
    shown = (
        f"{total:,} benchmarks"
        if len(frame) == total
        else f"{len(frame):,} of {total:,} benchmarks shown: the largest gaps and an even sample of the rest"
    )
    st.caption(
        f"{shown}. Inside the green band: within ±{threshold:.0%} of the prediction; below the diagonal: "
        "slower than predicted."
    )


def open_alerts(url: str, by_severity: dict, threshold: float) -> None:
    """The open alerts by severity, the worst as cards, the info ones grouped, and the open advisories."""
    st.subheader("Open alerts")
    if by_severity:
        st.markdown(
            "  ".join(
                f"{SEVERITY_ICONS.get(name, '')} {by_severity[name]} {name}"
                for name in SEVERITIES
                if name in by_severity
            )
        )
    alerts = state.top_alerts(url, ALERTS_SHOWN, alert_cards.CARD_SEVERITIES)
    if not by_severity:
        st.success(f"No open alert: every gap is within its threshold ({threshold:.0%}) or error band.")
    elif alerts:
        alert_cards.convention()
    for row in alerts:
        alert_cards.card(row)
    carded = sum(n for name, n in by_severity.items() if name in alert_cards.CARD_SEVERITIES)
    if carded > len(alerts):
        st.page_link("views/alerts.py", label=f"All {carded} open alerts", icon=":material/list:")
    if by_severity.get("info"):
        alert_cards.info_group(state.top_alerts(url, INFO_SHOWN, ("info",)), by_severity["info"])
    advice = advisory_panel.advisory_rows(url, None, True)
    if advice:
        st.subheader("Open advisories")
        advisory_panel.show(advice, "overview_advisory")


def latest_table(latest: pd.DataFrame) -> pd.DataFrame:
    """Each run's latest checkpoint as shown: text cells, a dash where nothing was measured."""
    measured = latest["best_speedup"].notna()
    return latest.assign(
        latest_checkpoint=latest["latest_checkpoint"].fillna("-"),
        setting=[
            setting_label(r) if ok else "-" for ok, (_, r) in zip(measured, latest.iterrows(), strict=True)
        ],
        deployment=latest["deployment"].fillna("-"),
        # text, so a run without a measurement reads `-` rather than `None`
        best_speedup=latest["best_speedup"].map(lambda v: number_text(v, 2, "×")),
        measured_tps=latest["measured_tps"].map(number_text),
    )[LATEST_COLUMNS]


def latest_checkpoints(url: str, runs: int) -> None:
    """Where the newest runs' latest checkpoints stand: their best measured speedup and where."""
    latest = state.latest_checkpoints(url, state.LATEST_RUNS)
    if latest.empty:
        st.info("No runs yet.")
        return
    table = latest_table(latest)
    with st.expander("Latest checkpoint per run", icon=":material/history:"):
        if runs > len(latest):
            st.caption(
                f"The {len(latest):,} runs with the newest checkpoints, of {runs:,}; every run is on "
                "the **Runs** page."
            )
        tables.show(
            table,
            key="overview_latest",
            column_config={
                "latest_checkpoint": "latest checkpoint",
                "best_speedup": st.column_config.TextColumn(
                    "best speedup",
                    help="measured tok/s over no speculation, best benchmark of the "
                    "latest checkpoint (superseded benchmarks left out)",
                ),
                "measured_tps": st.column_config.TextColumn("measured tok/s"),
                "setting": "best at",
            },
        )


render()
