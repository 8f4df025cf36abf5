"""The What-if page's depth x load section: a checkpoint's depth schedule on one deployment
(answers/schedule.py), drawn as a heat map with the schedule on it; cached reads, no writes."""

import streamlit as st

from specdash.answers.schedule import ScheduleError, checkpoint_schedule, depth_load_grid
from specdash.app import state, tables, widgets
from specdash.app.schedule_charts import schedule_frame, schedule_heatmap
from specdash.app.text import md
from specdash.costmodel.domain import PredictionSource

DEFAULT_LOADS = "1,2,4,8,16,32,64,128"


@st.cache_data(show_spinner=False)
def _schedule(url: str, deployment: str, run: str, checkpoint: str, loads: tuple[float, ...], max_steps: int):
    """(entries, grid, what it rests on) of the schedule, or (None, None, why not)."""
    try:
        made = state.read(url, checkpoint_schedule, deployment, run, checkpoint, loads, max_steps)
    except ScheduleError as exc:
        return None, None, str(exc)
    basis = {
        "source": made.source,
        "version": made.version,
        "estimated": made.baseline_estimated,
        "tau": made.tau_source,
        "extrapolated": made.extrapolated_loads,
        "measured": made.measured_loads,
    }
    return made.entries, depth_load_grid(made), basis


def _loads(text: str) -> tuple[float, ...] | None:
    try:
        loads = tuple(sorted({float(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        return None
    return loads if loads and all(load >= 1 for load in loads) else None


def _caveats(basis: dict) -> None:
    if basis["estimated"]:
        st.warning(
            "No benchmark without speculation on this deployment: its baseline is **estimated** from the depth "
            "sweep, and the speedups are against that estimate.",
            icon=":material/info:",
        )
    if basis["extrapolated"]:
        outside = ", ".join(f"{load:g}" for load in basis["extrapolated"])
        measured = ", ".join(f"{load:g}" for load in basis["measured"]) or "no load"
        st.warning(
            f"**Extrapolated** at batch size {outside}: the deployment was measured at {measured} only, and "
            "nothing measured says how its round grows there; no depth is predicted to gain more than at the "
            "nearest measured load.",
            icon=":material/warning:",
        )


def show(url: str, run: str, checkpoint: str, deployments: list[str], default: str, max_steps: int) -> None:
    """Depth x load for the chosen checkpoint on one deployment, with its schedule."""
    st.subheader("Depth × load")
    st.caption(
        "The best draft depth changes with the batch: verify cost grows with every batched token, so deep "
        "drafts pay at one request and cost at many. Each cell is the checkpoint's predicted tok/s per request "
        "as a share of the best depth at that load; the stars are the schedule (`specdash schedule`)."
    )
    cols = st.columns([2, 3])
    # another drafter starts on its own deployment (a menu kept on the last one asked it for a curve it lacks)
    widgets.follow("whatif_schedule_deployment", deployments, reset_by=(run, checkpoint), default=default)
    deployment = cols[0].selectbox("Deployment", deployments, key="whatif_schedule_deployment")
    text = cols[1].text_input("Batch sizes", DEFAULT_LOADS, key="whatif_schedule_loads")
    loads = _loads(text)
    if loads is None:
        st.error(f"{md(repr(text))}: give batch sizes >= 1 separated by commas, e.g. 1,8,32")
        return
    entries, grid, basis = _schedule(url, deployment, run, checkpoint, loads, max_steps)
    if entries is None:
        st.info(basis)
        return
    source = (
        f"calibrated set v{basis['version']}"
        if basis["source"] == PredictionSource.CALIBRATED
        else "the priors"
    )
    st.plotly_chart(
        schedule_heatmap(grid, entries, f"{run}/{checkpoint}\non {deployment} ({source})"),
        width="stretch",
        key="whatif_schedule_chart",
    )
    _caveats(basis)
    tables.show(
        schedule_frame(entries),
        hide_index=True,
        width="stretch",
        column_config={
            "τ": st.column_config.NumberColumn(format="%.2f"),
            "tok/s per request": st.column_config.NumberColumn(format="%.1f"),
            "aggregate tok/s": st.column_config.NumberColumn(format="%.1f"),
            "speedup": st.column_config.NumberColumn(format="%.2f×"),
            "extrapolated": st.column_config.CheckboxColumn(width=80),
        },
        key="whatif_schedule_table",
    )
