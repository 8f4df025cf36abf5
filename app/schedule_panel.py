"""The What-if page's depth x load section: a checkpoint's depth schedule on one deployment
(answers/schedule.py), drawn as a heat map with the schedule on it; cached reads, no writes."""

import streamlit as st

from specdash.answers.schedule import ScheduleError, checkpoint_schedule, depth_load_grid
from specdash.app import state, tables, widgets
from specdash.app.schedule_charts import context_heatmap, schedule_frame, schedule_heatmap
from specdash.app.text import md
from specdash.costmodel.context import parse_contexts
from specdash.costmodel.domain import PredictionSource

DEFAULT_LOADS = "1,2,4,8,16,32,64,128"


@st.cache_data(show_spinner=False)
def _schedule(
    url: str,
    deployment: str,
    run: str,
    checkpoint: str,
    loads: tuple[float, ...],
    max_steps: int,
    contexts: tuple[float, ...] = (),
):
    """(entries, grid, what it rests on) of the schedule, or (None, None, why not)."""
    try:
        made = state.read(
            url, checkpoint_schedule, deployment, run, checkpoint, loads, max_steps, contexts or None
        )
    except ScheduleError as exc:
        return None, None, str(exc)
    lengths = made.lengths
    basis = {
        "source": made.source,
        "version": made.version,
        "estimated": made.baseline_estimated,
        "tau": made.tau_source,
        "extrapolated": made.extrapolated_loads,
        "measured": made.measured_loads,
        "contexts_outside": made.extrapolated_contexts,
        "contexts_measured": made.measured_contexts,
        "reference_context": lengths.reference_tokens if lengths is not None else None,
    }
    return made.entries, depth_load_grid(made), basis


def _loads(text: str) -> tuple[float, ...] | None:
    try:
        loads = tuple(sorted({float(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        return None
    return loads if loads and all(load >= 1 for load in loads) else None


def _contexts(text: str) -> tuple[float, ...] | None:
    """Context lengths in tokens ("8k" = 8000) separated by commas; () for none, None when unreadable."""
    try:
        return parse_contexts(text)
    except ValueError:
        return None


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
    if basis["contexts_outside"]:
        outside = ", ".join(f"{c:,.0f}" for c in basis["contexts_outside"])
        measured = ", ".join(f"{c:,.0f}" for c in basis["contexts_measured"]) or "no stated context"
        st.warning(
            f"**Extrapolated** at context {outside} tokens: the deployment's benchmarks ran at {measured}; "
            "the KV read per request carries the rest (`docs/cost-model.md`, Context length).",
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
    cols = st.columns([2, 3, 2])
    # another drafter starts on its own deployment (a menu kept on the last one asked it for a curve it lacks)
    widgets.follow("whatif_schedule_deployment", deployments, reset_by=(run, checkpoint), default=default)
    deployment = cols[0].selectbox("Deployment", deployments, key="whatif_schedule_deployment")
    text = cols[1].text_input("Batch sizes", DEFAULT_LOADS, key="whatif_schedule_loads")
    context_text = cols[2].text_input(
        "Contexts (tokens)",
        "",
        key="whatif_schedule_contexts",
        placeholder="e.g. 1k,8k,32k",
        help="Mean decode contexts (prompt + half the output) to schedule at; empty: the benchmarks' own.",
    )
    loads, contexts = _loads(text), _contexts(context_text)
    if loads is None:
        st.error(f"{md(repr(text))}: give batch sizes >= 1 separated by commas, e.g. 1,8,32")
        return
    if contexts is None:
        st.error(
            f"{md(repr(context_text))}: give context lengths in tokens separated by commas, e.g. 1k,8k,32k"
        )
        return
    entries, grid, basis = _schedule(url, deployment, run, checkpoint, loads, max_steps, contexts)
    if entries is None:
        st.info(basis)
        return
    source = (
        f"calibrated set v{basis['version']}"
        if basis["source"] == PredictionSource.CALIBRATED
        else "the priors"
    )
    if len(contexts) > 1:
        st.plotly_chart(
            context_heatmap(entries, f"best depth by batch and context: {run}/{checkpoint}\non {deployment}"),
            width="stretch",
            key="whatif_context_chart",
        )
    first = [e for e in entries if e.context_tokens == (contexts[0] if contexts else None)]
    at = f" at {contexts[0]:,.0f} tokens of context" if contexts else ""
    st.plotly_chart(
        schedule_heatmap(grid, first, f"{run}/{checkpoint}{at}\non {deployment} ({source})"),
        width="stretch",
        key="whatif_schedule_chart",
    )
    _caveats(basis)
    tables.show(
        schedule_frame(entries),
        hide_index=True,
        width="stretch",
        column_config={
            "context": st.column_config.NumberColumn("context (tokens)", format="%.0f"),
            "τ": st.column_config.NumberColumn(format="%.2f"),
            "tok/s per request": st.column_config.NumberColumn(format="%.1f"),
            "aggregate tok/s": st.column_config.NumberColumn(format="%.1f"),
            "speedup": st.column_config.NumberColumn(format="%.2f×"),
            "extrapolated": st.column_config.CheckboxColumn(width=80),
        },
        key="whatif_schedule_table",
    )
