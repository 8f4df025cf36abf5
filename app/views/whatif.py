"""What-if: a checkpoint's acceptance curve on two deployment profiles side by side (PCIe and NVLink by
default), the cost model's tok/s at every draft depth, the break-even and the optimum; the profile's numbers
adjustable with sliders. Nothing is saved."""

from dataclasses import dataclass, replace

import pandas as pd
import streamlit as st

from specdash.app import depth_overlay, schedule_panel, state, tables, urlstate, widgets
from specdash.app.profile_choice import profile_defaults
from specdash.app.text import md
from specdash.app.whatif_charts import depth_figure, depth_table
from specdash.costmodel import CostParams, DepthPoint, depth_sweep, optimal_depth
from specdash.costmodel.domain import TauSource
from specdash.costmodel.uncertainty import prior_error_band

SIDES = ("left", "right")
TRAINING, MEASURED = "training accuracy (acc_i)", "measured in benchmarks"
ALL_DATASETS = "all datasets"


@dataclass(frozen=True)
class Choice:
    """What the top row chose: the drafter, how deep and wide it drafts, and the load."""

    run: pd.Series
    names: dict[int, str]  # the run's checkpoints by id
    checkpoint_id: int
    own: pd.DataFrame  # the deployments the checkpoint was benchmarked on, most benchmarks first
    max_steps: int
    topk: int
    load: int


@dataclass(frozen=True)
class Acceptance:
    """The acceptance per draft position the sweeps use, and where it comes from."""

    source: str  # TRAINING or MEASURED
    rates: list[float]
    trained: int  # the depth it holds for (trained, or deepest measured)
    measured_on: str | None  # the dataset the measured curve and diamonds are on (None: every one)


@dataclass(frozen=True)
class Sweep:
    """One profile's depth sweep, as drawn."""

    side: str
    name: str
    deployment_id: int
    band: float
    baseline_tps: float
    points: list[DepthPoint]
    best: DepthPoint
    outside: bool  # a load the deployment was never measured at


def render() -> None:
    url = state.db_url()
    st.title("What-if")
    st.caption(
        "How deep should this drafter speculate on this hardware? All-reduce is paid once per verify round, "
        "while compute grows with every verified token: the larger all-reduce's share of a step, the cheaper "
        "a deep draft. Move the sliders to see."
    )
    runs = state.runs_frame(url)
    runs = runs[runs["checkpoints"] > 0] if not runs.empty else runs
    deployments = state.deployments_frame(url)
    if runs.empty or deployments.empty:
        st.info(
            "Needs a checkpoint (with training accuracies or benchmarks) and a deployment profile: load "
            "them on the **Upload** page or with `specdash ingest`, or run `specdash demo` to explore the "
            "example data."
        )
        st.stop()
    url_state = urlstate.UrlState("whatif")
    choice = top_row(url, url_state, runs, deployments)
    acceptance = acceptance_curve(url, choice)
    profile_names = deployments["name"].tolist()
    # a drafter starts on the deployments it was measured on, not on another model's box
    defaults = profile_defaults(deployments, choice.own["name"].tolist() if not choice.own.empty else [])
    columns = st.columns(2, gap="large")
    sweeps = []
    for side, column, default in zip(SIDES, columns, defaults, strict=True):
        with column:
            sweeps.append(profile_sweep(url, url_state, side, default, deployments, choice, acceptance))
    draw_sweeps(url, choice, acceptance, sweeps)
    run_name = str(choice.run["name"])
    schedule_panel.show(
        url, run_name, choice.names[choice.checkpoint_id], profile_names, defaults[0], choice.max_steps
    )


def top_row(url: str, url_state: urlstate.UrlState, runs: pd.DataFrame, deployments: pd.DataFrame) -> Choice:
    """The run, checkpoint, deepest draft, top-k and load menus; the ones below the run follow it."""
    pick = st.columns([2, 2, 1, 1, 1])
    run, names, checkpoint_id = choose_drafter(url, url_state, runs, pick)
    # the drafter's own deployment (the one it was benchmarked on most) and the load it was measured at
    own = state.benchmarked_deployments(url, (checkpoint_id,))
    own_name = own["name"].iloc[0] if not own.empty else None
    own_id = int(own["id"].iloc[0]) if own_name else int(deployments["id"].iloc[0])
    # as deep as the schedule and the Checkpoints page look unless told (answers.depth.default_max_steps)
    deepest_default = min(24, state.default_max_steps(url, checkpoint_id, own_id))
    widgets.follow("whatif_max_steps", range(1, 25), reset_by=checkpoint_id, default=deepest_default)
    url_state.restore("whatif_max_steps", "depth", range(1, 25), parse=int)
    max_steps = pick[2].slider("Deepest draft K", 1, 24, key="whatif_max_steps")  # its value: follow()
    url_state.publish("depth", max_steps, deepest_default)
    url_state.restore("whatif_topk", "topk", (1, 2, 4), parse=int)
    topk = pick[3].selectbox(
        "Top-k",
        (1, 2, 4),
        key="whatif_topk",
        help="candidates per draft step; above 1 the draft is a tree (an approximation)",
    )
    url_state.publish("topk", topk, 1)
    own_measured = state.measured_by_depth(url, checkpoint_id, own_id, None) if own_name else None
    load = choose_load(url_state, pick[4], checkpoint_id, own_measured)
    return Choice(run, names, checkpoint_id, own, int(max_steps), int(topk), load)


def choose_drafter(
    url: str, url_state: urlstate.UrlState, runs: pd.DataFrame, pick: list
) -> tuple[pd.Series, dict[int, str], int]:
    """The run (the one with the most checkpoints first) and its checkpoint (the latest first)."""
    run_names = runs["name"].tolist()
    url_state.restore("whatif_run", "run", run_names)
    if st.session_state.get("whatif_run") not in run_names:
        st.session_state["whatif_run"] = runs.sort_values(["checkpoints", "name"], ascending=[False, True])[
            "name"
        ].iloc[0]
    run_name = pick[0].selectbox("Run", run_names, key="whatif_run")
    url_state.publish("run", run_name)
    run = runs[runs["name"] == run_name].iloc[0]
    checkpoints = state.checkpoints_frame(url, (int(run["id"]),))
    names = dict(zip(checkpoints["id"].astype(int), checkpoints["name"], strict=True))
    checkpoint_key = f"whatif_checkpoint_{run_name}"
    url_state.restore(checkpoint_key, "ckpt", list(names), parse=int)
    if st.session_state.get(checkpoint_key) not in names:
        st.session_state[checkpoint_key] = list(names)[-1]
    checkpoint_id = pick[1].selectbox(
        "Checkpoint (its acceptance curve)",
        list(names),
        format_func=lambda i: str(names[i]),
        key=checkpoint_key,
    )
    assert checkpoint_id is not None  # a run listed here has checkpoints
    url_state.publish("ckpt", checkpoint_id)
    return run, names, checkpoint_id


def choose_load(
    url_state: urlstate.UrlState, cell, checkpoint_id: int, own_measured: pd.DataFrame | None
) -> int:
    """The load menu: 1 and the loads the checkpoint was measured at, starting at the most measured one."""
    measured_load = (
        int(str(own_measured.groupby("concurrency")["n"].sum().idxmax()))
        if own_measured is not None and not own_measured.empty
        else 1
    )
    load_options = sorted(
        {1, measured_load, *(own_measured["concurrency"].astype(int) if own_measured is not None else [])}
    )
    widgets.follow("whatif_load", load_options, reset_by=checkpoint_id, default=measured_load)
    url_state.restore("whatif_load", "load", load_options, parse=int)
    load = cell.selectbox(
        "Load (concurrency)",
        load_options,
        key="whatif_load",
        help="requests decoded together; starts at the load this checkpoint was measured at",
    )
    url_state.publish("load", load, measured_load)
    return int(load)


def acceptance_curve(url: str, choice: Choice) -> Acceptance:
    """The acceptance per position from training accuracies or from benchmarks (a choice when both exist),
    said in a caption; stops the page when the checkpoint has neither."""
    checkpoint_id, run = choice.checkpoint_id, choice.run
    training_rates = state.position_acceptance(url, (checkpoint_id,))["rate"].tolist()
    measured = state.measured_acceptance(url, checkpoint_id, None)
    sources = [name for name, known in ((TRAINING, training_rates), (MEASURED, measured.rates)) if known]
    if not sources:
        st.info(
            "This checkpoint has neither training accuracies (acc_i) nor speculative benchmarks with an "
            "accept length: ingest its SpecForge training log, or a benchmark of it, on the **Upload** "
            "page; or choose another checkpoint."
        )
        st.stop()
    source = (
        st.radio("Acceptance from", sources, horizontal=True, key="whatif_acceptance_source")
        if len(sources) > 1
        else sources[0]
    )
    if source == TRAINING:
        rates = training_rates
        trained = (
            int(run["ttt_length"])
            if run["ttt_length"] == run["ttt_length"] and run["ttt_length"]
            else len(rates)
        )
        st.caption(
            "Conditional acceptance per draft position (training acc_i): "
            + ", ".join(f"{r:.2f}" for r in rates)
            + f". Past position {len(rates)} the cost model extrapolates (hollow markers)."
        )
        return Acceptance(source, rates, trained, None)
    return measured_curve(url, checkpoint_id, measured)


def measured_curve(url: str, checkpoint_id: int, measured) -> Acceptance:
    """The acceptance the checkpoint's benchmarks imply (on one dataset or all), said in a note."""
    measured_on = None
    if len(measured.datasets) > 1:
        dataset = st.selectbox(
            "Measured on", [ALL_DATASETS, *measured.datasets], key=f"whatif_dataset_{checkpoint_id}"
        )
        if dataset != ALL_DATASETS:
            measured = state.measured_acceptance(url, checkpoint_id, dataset)
            measured_on = dataset
    rates = list(measured.rates)
    basis = (
        "vLLM's per-position acceptance (survival) rates"
        if measured.source == "survival"
        else "measured accept lengths "
        + ", ".join(f"τ {tau:.2f} at K = {k}" for k, tau in measured.accept_lengths.items())
        + " (constant conditional rate between measured depths)"
    )
    st.info(
        "**Measured-derived acceptance**: this checkpoint has no training accuracies, so its curve comes "
        f"from {measured.benchmarks} benchmark(s): {basis}. Per position: "
        + ", ".join(f"{r:.2f}" for r in rates)
        + f". Past K = {len(rates)} it is extrapolated (hollow markers)."
        + depth_overlay.rise_note(rates, measured.accept_lengths),
        icon=":material/science:",
    )
    return Acceptance(MEASURED, rates, measured.depth, measured_on)


def profile_sweep(
    url: str,
    url_state: urlstate.UrlState,
    side: str,
    default: str,
    deployments: pd.DataFrame,
    choice: Choice,
    acceptance: Acceptance,
) -> Sweep:
    """One side's profile menu and sliders, and the depth sweep they give: untouched, the chart is the
    prediction every page and command gives (answers/depth.py); moved, the sliders' profile is a what-if of
    its own."""
    profile_names = deployments["name"].tolist()
    widgets.follow(f"whatif_profile_{side}", profile_names, reset_by=choice.checkpoint_id, default=default)
    url_state.restore(f"whatif_profile_{side}", side, profile_names)
    name = st.selectbox("Deployment profile", profile_names, key=f"whatif_profile_{side}")
    url_state.publish(side, name)
    row = deployments[deployments["name"] == name].iloc[0]
    # the costs the model uses: calibrated, else the profile with published priors for what it leaves out
    profile = state.effective_profile(url, int(row["id"]), choice.load)
    st.caption(f"Starting from: {profile['source']}, at concurrency {choice.load}.")
    params, edited = profile_sliders(side, name, profile, choice.load)
    curve = None
    if not edited:
        tau_source = TauSource.TRAINING if acceptance.source == TRAINING else TauSource.MEASURED
        curve = state.depth_curve(
            url,
            choice.checkpoint_id,
            int(row["id"]),
            choice.load,
            choice.topk,
            choice.max_steps,
            acceptance.measured_on,
            tau_source,
        )
    if curve is not None:
        points, best, band = curve.points, curve.best.depth_point(), curve.band
        baseline_tps = curve.baseline_tps
    else:
        points = depth_sweep(params, acceptance.rates, choice.max_steps, choice.topk)
        best = optimal_depth(points)
        baseline_tps = params.baseline_tps
        band = profile.get("error_band") or prior_error_band(
            TauSource.TRAINING if acceptance.source == TRAINING else TauSource.MEASURED
        )
        st.caption("Edited profile: a what-if of its own, not the deployment's prediction.")
    outside = curve is not None and curve.extrapolated_load  # a load the deployment was never measured at
    return Sweep(side, name, int(row["id"]), band, baseline_tps, points, best, bool(outside))


def profile_sliders(side: str, name: str, profile: dict, load: int) -> tuple[CostParams, bool]:
    """The profile's numbers as inputs; returns the parameters and whether any was moved."""
    # a new profile or load starts from its own numbers
    scope = f"{side}_{name}" + (f"_at{load}" if load != 1 else "")
    baseline_tps = st.number_input(
        "Baseline decode tok/s (no speculation)",
        1.0,
        100_000.0,
        float(profile["baseline_tps"]),
        key=f"whatif_baseline_{scope}",
    )
    sliders = st.columns(3)
    comm_fraction = sliders[0].slider(
        "All-reduce share of a step",
        0.0,
        0.95,
        float(profile["comm_fraction"]),
        0.01,
        key=f"whatif_comm_{scope}",
    )
    draft_step_ms = sliders[1].slider(
        "Draft ms per step", 0.0, 5.0, float(profile["draft_step_ms"]), 0.01, key=f"whatif_draft_{scope}"
    )
    growth = sliders[2].slider(
        "Verify compute growth per extra token",
        0.0,
        0.2,
        min(0.2, float(profile["verify_growth_compute"])),
        0.005,
        key=f"whatif_growth_{scope}",
        help="share by which the compute of a verify forward grows per extra verified token; the "
        "all-reduce share stays what it is however many tokens are verified",
    )
    params = CostParams(
        baseline_tps=baseline_tps,
        comm_fraction=comm_fraction,
        draft_step_ms=draft_step_ms,
        round_overhead_ms=float(profile["round_overhead_ms"]),
        verify_growth_compute=growth,
        verify_growth_comm=float(profile["verify_growth_comm"]),
    )
    starting = (
        float(profile["baseline_tps"]),
        float(profile["comm_fraction"]),
        float(profile["draft_step_ms"]),
        min(0.2, float(profile["verify_growth_compute"])),
    )
    return params, (baseline_tps, comm_fraction, draft_step_ms, growth) != starting


def draw_sweeps(url: str, choice: Choice, acceptance: Acceptance, sweeps: list[Sweep]) -> None:
    """The charts one under the other, each the page's width (side by side each had ~120 px of plot at
    1400 px); one when both sides are the same deployment with the same numbers."""
    top_tps = max(max(p.tps for p in sweep.points) for sweep in sweeps)
    left, right = sweeps
    if replace(right, side=left.side) == left:
        sweeps = [left]
        st.caption(
            "Both profiles are the same deployment with the same numbers, so one chart is drawn: choose "
            "another profile on the right, or move its sliders, to compare."
        )
    for sweep in sweeps:
        with st.container():
            depth_chart(url, choice, acceptance, sweep, top_tps)


def depth_chart(url: str, choice: Choice, acceptance: Acceptance, sweep: Sweep, top_tps: float) -> None:
    """One profile's chart with what was measured on it, its verdict and the numbers behind it."""
    figure = depth_figure(
        sweep.points,
        sweep.best,
        sweep.baseline_tps,
        sweep.name,
        acceptance.trained,
        top_tps,
        depth_label="trained depth" if acceptance.source == TRAINING else "deepest measured",
    )
    depth_overlay.add_band(figure, sweep.points, sweep.band)
    on_profile = state.measured_by_depth(
        url, choice.checkpoint_id, sweep.deployment_id, acceptance.measured_on
    )
    drawn = depth_overlay.add_measured(figure, on_profile, choice.load, choice.topk)
    st.plotly_chart(figure, width="stretch", key=f"whatif_chart_{sweep.side}")
    if drawn:
        st.caption(
            f"Diamonds: this checkpoint measured on {md(sweep.name)} at concurrency {choice.load} "
            f"({md(acceptance.measured_on or 'mean over datasets')}), "
            f"against the predicted curve and its expected error (±{sweep.band:.0%})."
        )
    (st.warning if sweep.best.extrapolated or sweep.outside else st.success)(
        verdict(sweep, acceptance, choice.load) + "."
    )
    tables.show(
        depth_table(sweep.points),
        hide_index=True,
        width="stretch",
        height=260,
        column_config={
            "K": st.column_config.NumberColumn(width=30, help="draft steps"),
            "τ": st.column_config.NumberColumn(format="%.2f", help="accept length"),
            "break-even τ": st.column_config.NumberColumn(format="%.2f"),
            "round ms": st.column_config.NumberColumn(format="%.2f"),
            "tok/s": st.column_config.NumberColumn(format="%.1f"),
            "speedup": st.column_config.NumberColumn(format="%.2f×"),
            "extrapolated": st.column_config.CheckboxColumn(width=80),
        },
    )


def verdict(sweep: Sweep, acceptance: Acceptance, load: int) -> str:
    """The best depth in words, with what it extrapolates."""
    best, trained = sweep.best, acceptance.trained
    text = (
        f"Best at **K = {best.steps}** ({best.draft_tokens} draft tokens): {best.tps:.0f} tok/s, "
        f"{best.speedup:.2f}× no speculation"
    )
    if best.extrapolated:
        text += (
            f"; deeper than the drafter was trained ({trained}): train deeper before relying on it"
            if acceptance.source == TRAINING
            else f"; deeper than any benchmark measured ({trained}): benchmark it there before relying on it"
        )
    if sweep.outside:
        text += (
            f"; extrapolated: {md(sweep.name)} was never measured at concurrency {load}, so no depth is "
            f"predicted to gain more than at its nearest measured load, and the band is widened "
            f"(±{sweep.band:.0%})"
        )
    return text


render()
