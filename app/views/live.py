"""Live: a deployment `specdash scrape` is watching, window by window: accept length, per-position survival
and tok/s over time against the prediction, collapse alerts marked; the page follows the store while
windows arrive."""

from datetime import timedelta

import pandas as pd
import streamlit as st

from specdash.app import frames, state, tables
from specdash.app.live_charts import accept_length_figure, survival_figure, tps_figure
from specdash.db import live_windows
from specdash.db.models import utcnow

# A window stored this recently: a scraper is probably running.
SCRAPING_WINDOW = timedelta(minutes=5)


@st.cache_data(show_spinner=False)
def targets(url: str) -> list[live_windows.LiveTarget]:
    return state.read(url, live_windows.live_targets)


@st.cache_data(show_spinner=False)
def series(url: str, deployment_id: int, checkpoint_id: int | None):
    windows = state.read(url, live_windows.live_series, deployment_id, checkpoint_id)
    return frames.frame(windows, live_windows.LiveWindow)


def label(target: live_windows.LiveTarget) -> str:
    drafter = f"{target.run}/{target.checkpoint}" if target.checkpoint else "drafter not named"
    return f"{target.deployment}: {drafter} ({target.windows} window(s))"


def render() -> None:
    url = state.db_url()
    st.title("Live")
    state.follow_store(url)  # a new window reruns the page
    found = targets(url)
    if not found:
        st.info(
            "No live windows yet. Watch a serving engine with `specdash scrape http://HOST:PORT/metrics "
            "--deployment NAME --run RUN --checkpoint CKPT` (vLLM, SGLang or llama-server), or store two saved "
            "scrapes with `specdash scrape --once a.prom b.prom --seconds 30 --deployment NAME`."
        )
        st.stop()
    scraping_note(found[0].stored)
    choice = st.selectbox(
        "Deployment and drafter", range(len(found)), format_func=lambda i: label(found[i]), key="live_target"
    )
    target = found[choice]
    frame = series(url, target.deployment_id, target.checkpoint_id)
    latest_window(frame, target.windows)
    st.plotly_chart(accept_length_figure(frame), key="live_accept_length")
    st.plotly_chart(survival_figure(frame), key="live_survival")
    st.plotly_chart(tps_figure(frame), key="live_tps")
    with st.expander("Windows"):
        window_table(frame)


def scraping_note(stored) -> None:
    """Say a scraper seems to be running when the latest window is recent."""
    if stored is not None and utcnow() - stored <= SCRAPING_WINDOW:
        st.caption(
            f":material/sensors: Scraping: the latest window was stored at {stored:%H:%M:%S} UTC; this page "
            f"looks for new windows every {state.LIVE_SECONDS} s."
        )


def latest_window(frame: pd.DataFrame, windows: int) -> None:
    """The latest window's numbers, and whether acceptance collapsed or recovered in it."""
    latest = frame.iloc[-1]
    cells = st.columns(4)
    cells[0].metric(
        "Accept length",
        "-" if latest["accept_length"] != latest["accept_length"] else f"{latest['accept_length']:.2f}",
    )
    cells[1].metric("tok/s per request", f"{latest['decode_tps']:.1f}")
    cells[2].metric("Concurrency", int(latest["concurrency"]))
    cells[3].metric("Windows", f"{windows:,}")
    if len(frame) < windows:
        st.caption(f"The charts draw the latest {len(frame):,} of {windows:,} windows.")
    if latest["acceptance"] in ("collapsed", "still collapsed"):
        st.error(
            f"Acceptance has collapsed (window #{int(latest['benchmark_id'])}): see the **Alerts** page.",
            icon=":material/warning:",
        )
    elif latest["acceptance"] == "recovered":
        st.success("Acceptance recovered in the latest window.", icon=":material/check_circle:")


def window_table(frame: pd.DataFrame) -> None:
    """Every window drawn, one row each, with the requests' context where it changed."""
    windows = frame.drop(columns=["position_survival", "input_tokens", "output_tokens"])
    context = tables.context_labels(list(zip(frame["input_tokens"], frame["output_tokens"], strict=True)))
    if context is not None:  # the requests' lengths changed between windows: say how
        windows.insert(list(windows.columns).index("concurrency") + 1, "context", context)
    tables.show(
        windows,
        {
            "benchmark_id": st.column_config.NumberColumn("window #", help="each window is a benchmark"),
            "measured_at": st.column_config.DatetimeColumn("stored (UTC)", format="YYYY-MM-DD HH:mm:ss"),
            "accept_length": st.column_config.NumberColumn("τ (accept length)", format="%.2f"),
            "predicted_accept_length": st.column_config.NumberColumn("predicted τ", format="%.2f"),
            "decode_tps": st.column_config.NumberColumn("tok/s per request", format="%.1f"),
            "predicted_tps": st.column_config.NumberColumn("predicted tok/s", format="%.1f"),
            "output_throughput": st.column_config.NumberColumn("aggregate tok/s", format="%.1f"),
            "code": "diagnosis",
        },
        key="live_windows",
    )


render()
