"""Settings: the gap threshold (global and per deployment), deployment cost profiles (create and edit), and
calibration of a deployment's profile from its trusted benchmarks."""

import pandas as pd
import streamlit as st

from specdash.answers import edits
from specdash.app import advisory_panel, parameter_sets_panel, state, tables
from specdash.app.parameter_sets_panel import refreshed
from specdash.app.tables import MISSING, header
from specdash.app.text import md
from specdash.db import profiles
from specdash.db.profiles import ProfileError

NEW = "+ new deployment"
EVERY = "every deployment"
INTERCONNECTS = ("pcie", "nvlink", "infiniband", "ethernet", "other")
# the profile table: what the Settings form edits, less the threshold and notes, and how much it judges
PROFILE_COLUMNS = [
    *(f for f in profiles.PROFILE_FIELDS if f not in ("gap_threshold", "notes")),
    "benchmarks",
]


def render() -> None:
    url = state.db_url()
    st.title("Settings")
    deployments = thresholds(url)
    profile_section(url, deployments)
    names = deployments["name"].tolist() if not deployments.empty else []
    profile_form(url, deployments, names)
    calibration(deployments, names)
    parameter_sets_panel.show(url)
    advisory_panel.settings_section(url)
    change_history(url)


def profile_table(deployments: pd.DataFrame, sets: pd.DataFrame) -> pd.DataFrame:
    """The profiles as shown: columns no deployment states left out, the sets in use named per deployment."""
    active = sets[sets["is_active"]] if not sets.empty else sets
    named = {
        deployment_id: " + ".join(
            f"{r.source} v{r.version}" for r in rows.sort_values("version").itertuples()
        )
        for deployment_id, rows in (active.groupby("deployment_id") if not active.empty else [])
    }
    table = deployments[PROFILE_COLUMNS].dropna(axis=1, how="all")
    return table.assign(sets=[named.get(int(i), "none yet") for i in deployments["id"]])


def scalars(params) -> dict[str, float]:
    """A fit's single-number parameters (the per-drafter and per-dataset ones have their own report)."""
    return {name: value for name, value in vars(params).items() if isinstance(value, int | float)}


# --- thresholds ----------------------------------------------------------------------------------------
def thresholds(url: str) -> pd.DataFrame:
    """The global gap threshold and each deployment's own; the deployments, read once for the whole page."""
    st.subheader("Gap threshold")
    st.caption(
        "A benchmark whose tok/s departs from its prediction by at least this share is an alert. A deployment "
        "may set its own; the others use the global one."
    )
    deployments = state.deployments_frame(url)
    global_threshold = state.gap_threshold(url)
    left, right = st.columns([1, 2], gap="large")
    with left:
        global_threshold_form(global_threshold)
    with right:
        if deployments.empty:
            st.info("No deployments yet.")
        else:
            deployment_thresholds(deployments, global_threshold)
    return deployments


def global_threshold_form(global_threshold: float) -> None:
    with st.form("settings_global_threshold"):
        value = st.number_input(
            "Global threshold (%)",
            min_value=0.1,
            max_value=100.0,
            value=round(global_threshold * 100, 2),
            step=1.0,
            key="settings_threshold",
        )
        if st.form_submit_button("Save global threshold", icon=":material/save:"):
            try:
                summary = state.write(edits.set_global_threshold, value / 100)
            except ProfileError as exc:
                st.error(str(exc))
            else:
                st.toast(f"Global threshold {value:g}%: {refreshed(summary)}")
                st.rerun()


def deployment_thresholds(deployments: pd.DataFrame, global_threshold: float) -> None:
    """Each deployment's own threshold, editable in a table and saved together."""
    own = deployments[["id", "name", "gap_threshold"]].assign(
        threshold_pct=deployments["gap_threshold"] * 100
    )[["name", "threshold_pct"]]
    edited = tables.edit(
        own,
        {
            "name": "deployment",
            "threshold_pct": st.column_config.NumberColumn(
                "own threshold (%)",
                min_value=0.1,
                max_value=100.0,
                format="%.1f",
                help=f"{MISSING}: the global {global_threshold:.0%}",
            ),
        },
        disabled=["name"],
        key="settings_deployment_thresholds",
    )
    changed = [
        (int(deployments.iloc[i]["id"]), None if pd.isna(new) else float(new) / 100)
        for i, (old, new) in enumerate(zip(own["threshold_pct"], edited["threshold_pct"], strict=True))
        if not (pd.isna(old) and pd.isna(new)) and old != new
    ]
    if st.button(
        "Save deployment thresholds",
        disabled=not changed,
        key="settings_save_thresholds",
        icon=":material/save:",
    ):
        try:
            for deployment_id, threshold in changed:
                summary = state.write(edits.set_deployment_threshold, deployment_id, threshold)
        except ProfileError as exc:
            st.error(str(exc))
        else:
            st.toast(f"Thresholds saved: {refreshed(summary)}")
            st.rerun()


# --- deployment profiles ----------------------------------------------------------------------------------
def profile_section(url: str, deployments: pd.DataFrame) -> None:
    """The deployments' cost profiles, one row each, with the parameter sets that predict for them."""
    st.subheader("Deployment profiles")
    st.caption(
        "The cost model's inputs per deployment: baseline decode tok/s (a measured no-speculation benchmark "
        "takes precedence), the share of a step spent in TP collectives, draft and overhead ms, and how verify "
        "cost grows per extra verified token. A changed profile becomes a new parameter set version."
    )
    if deployments.empty:
        return
    in_use = state.parameter_sets(url)
    tables.show(
        profile_table(deployments, in_use),
        {
            "name": "deployment",
            "interconnect": "interconnect",
            "engine": "engine",
            "baseline_tps": st.column_config.NumberColumn(
                "baseline tok/s", format="%.1f", help="a measured no-speculation benchmark takes precedence"
            ),
            "comm_fraction": st.column_config.NumberColumn("all-reduce share", format="%.2f"),
            "draft_step_ms": st.column_config.NumberColumn("draft ms/step", format="%.2f"),
            "round_overhead_ms": st.column_config.NumberColumn("overhead ms/round", format="%.2f"),
            "verify_growth_compute": st.column_config.NumberColumn("verify growth (compute)", format="%.3f"),
            "verify_growth_comm": st.column_config.NumberColumn("verify growth (all-reduce)", format="%.3f"),
            "benchmarks": st.column_config.NumberColumn("benchmarks", width=90),
            "sets": st.column_config.TextColumn(
                "predicted by", width=190, help="the parameter sets in use (see Parameter sets below)"
            ),
        },
        key="settings_profiles",
    )
    st.caption(
        f"A dash ({MISSING}) is a cost the profile does not state: the cost model then uses the published prior for the deployment's "
        "GPU, TP size and interconnect (the What-if shows the numbers), and a calibration fits its own."
    )


def form_defaults(current: dict) -> dict:
    """What the form shows for the deployment being edited (or a new one), in the widgets' own types."""

    def given(name, default):
        value = current.get(name)
        return default if value is None else value

    interconnect = given("interconnect", "pcie")
    return {
        "name": given("name", ""),
        "gpu": given("gpu", ""),
        "engine": given("engine", ""),
        "num_gpus": int(given("num_gpus", 1)),
        "tp_size": int(given("tp_size", 1)),
        "interconnect": interconnect if interconnect in INTERCONNECTS else "other",
        "baseline_tps": float(given("baseline_tps", 0.0)),
        "comm_fraction": float(given("comm_fraction", 0.0)),
        "draft_step_ms": float(given("draft_step_ms", 0.0)),
        "round_overhead_ms": float(given("round_overhead_ms", 0.0)),
        "verify_growth_compute": float(given("verify_growth_compute", 0.0)),
        "verify_growth_comm": float(given("verify_growth_comm", 0.0)),
        "notes": given("notes", ""),
    }


def as_profile(form: dict) -> dict:
    """Form values as profile fields: 0 baseline tok/s reads as unknown (a measured no-speculation benchmark
    then sets it), empty text as none."""
    values = {k: (None if v == "" else v) for k, v in form.items()}
    values["baseline_tps"] = values["baseline_tps"] or None
    return values


def profile_form(url: str, deployments: pd.DataFrame, names: list[str]) -> None:
    """Choose a deployment (or a new one) and edit its profile in a form; saving refreshes its predictions."""
    ids_by_name = dict(zip(names, deployments["id"].astype(int), strict=True)) if names else {}
    options: list[str | int] = [NEW, *ids_by_name.values()]
    choice = st.selectbox(
        "Edit",
        options,
        format_func=lambda c: c if c == NEW else names[list(ids_by_name.values()).index(c)],
        key="settings_profile_choice",
    )
    editing = choice != NEW
    current = state.profile_values(url, int(choice)) if editing else {}
    # Widgets are keyed per deployment and per its current parameter-set version: another deployment's form,
    # or this one's after a restore, never shows values typed for something else.
    scope = f"{choice}_{state.profile_revision(url, int(choice))}" if editing else "new"
    shown = form_defaults(current)
    with st.form(f"settings_profile_{scope}"):
        if editing:
            st.caption("Only the fields you change are saved; the others keep their stored values.")
        form = profile_fields(shown, f"profile_{scope}_")
        label = "Save profile" if editing else "Create deployment"
        if st.form_submit_button(label, type="primary", icon=":material/save:"):
            try:
                if editing:
                    deployment, summary, changed = state.write(
                        edits.edit_deployment, int(choice), as_profile(shown), as_profile(form)
                    )
                else:
                    deployment, summary = state.write(edits.save_deployment, as_profile(form))
                    changed = ["new"]
            except ProfileError as exc:
                st.error(str(exc))
            else:
                if changed:
                    st.toast(f"{md(deployment.name)} saved ({', '.join(changed)}): {refreshed(summary)}")
                else:
                    st.toast("Nothing changed.")
                st.rerun()


def profile_fields(shown: dict, key: str) -> dict:
    """The profile form's inputs, three to a row, as the values they hold."""
    cols = st.columns(3)
    form = {
        "name": cols[0].text_input("Name", shown["name"], key=key + "name"),
        "gpu": cols[1].text_input("GPU", shown["gpu"], key=key + "gpu"),
        "engine": cols[2].text_input("Engine", shown["engine"], key=key + "engine"),
        "num_gpus": cols[0].number_input("GPUs", 1, 1024, shown["num_gpus"], key=key + "num_gpus"),
        "tp_size": cols[1].number_input("TP size", 1, 1024, shown["tp_size"], key=key + "tp_size"),
        "interconnect": cols[2].selectbox(
            "Interconnect",
            INTERCONNECTS,
            index=INTERCONNECTS.index(shown["interconnect"]),
            key=key + "interconnect",
        ),
        "baseline_tps": cols[0].number_input(
            "Baseline decode tok/s (0: unknown)",
            0.0,
            100_000.0,
            shown["baseline_tps"],
            key=key + "baseline_tps",
        ),
        "comm_fraction": cols[1].number_input(
            "All-reduce share of a step", 0.0, 0.99, shown["comm_fraction"], step=0.05, key=key + "comm"
        ),
        "draft_step_ms": cols[2].number_input(
            "Draft ms per step",
            0.0,
            1000.0,
            shown["draft_step_ms"],
            step=0.05,
            format="%.3f",
            key=key + "draft_ms",
        ),
        "round_overhead_ms": cols[0].number_input(
            "Overhead ms per round", 0.0, 1000.0, shown["round_overhead_ms"], key=key + "overhead"
        ),
        "verify_growth_compute": cols[1].number_input(
            "Verify compute growth per extra token",
            0.0,
            10.0,
            shown["verify_growth_compute"],
            step=0.01,
            format="%.3f",
            key=key + "growth_compute",
        ),
        "verify_growth_comm": cols[2].number_input(
            "Verify all-reduce growth per extra token",
            0.0,
            10.0,
            shown["verify_growth_comm"],
            step=0.01,
            format="%.3f",
            key=key + "growth_comm",
        ),
    }
    form["notes"] = st.text_input("Notes", shown["notes"], key=key + "notes")
    return form


# --- calibration ------------------------------------------------------------------------------------------
def calibration(deployments: pd.DataFrame, names: list[str]) -> None:
    """Run a calibration (kept in the session until applied), then show and apply each deployment's fit."""
    st.subheader("Calibration")
    st.caption(
        "Fit a deployment's draft ms per step, round overhead, verify growth and the factor from training accuracy "
        "to served acceptance to its trusted benchmarks (robust least squares; superseded benchmarks and those with "
        "a critical diagnosis are left out). Applying a fit adds a calibrated parameter set, never an overwrite: "
        "its predictions appear next to theory's on every page."
    )
    pick = st.columns([3, 1], vertical_alignment="bottom")
    target = pick[0].selectbox(
        "Deployment to calibrate", [EVERY, *names], key="settings_calibrate_deployment"
    )
    if pick[1].button("Run calibration", icon=":material/model_training:", key="settings_calibrate"):
        target_id = None if target == EVERY else int(deployments[deployments["name"] == target].iloc[0]["id"])
        st.session_state["calibration"] = state.run_calibration(target_id)

    reports, skipped = st.session_state.get("calibration", ([], []))
    applied = {r.deployment_id: state.applied_version(r) for r in reports}
    pending = [r for r in reports if applied[r.deployment_id] is None]
    if len(pending) > 1 and st.button(
        f"Apply all {len(pending)} fits not applied yet",
        type="primary",
        icon=":material/done_all:",
        key="settings_apply_all",
    ):
        sets, summary = state.write(edits.apply_calibrations_and_refresh, pending)
        st.toast(f"{len(sets)} calibrated parameter set(s) saved; {refreshed(summary)}")
        st.rerun()
    for report in reports:
        with st.container(border=True):
            calibration_report(report, applied[report.deployment_id])
    for item in skipped:
        st.info(f"{md(item.deployment_name)}: not calibrated: {md(item.reason)}.")


def calibration_report(report, applied_version: int | None) -> None:
    """One deployment's fit: its parameters beside the prior's, its errors, and applying it."""
    excluded = ", ".join(f"{reason}: {n}" for reason, n in report.exclusions.items())
    st.markdown(
        f"**{md(report.deployment_name)}**: fitted to {report.n_benchmarks} benchmark(s)"
        + (f", {report.excluded} left out ({md(excluded)})" if report.excluded else "")
    )
    fit = report.fit
    fitted = pd.DataFrame(
        [{"": "profile (prior)", **scalars(fit.prior)}, {"": "calibrated", **scalars(fit.params)}]
    )
    tables.show(
        fitted,
        {"": st.column_config.TextColumn("parameters", width=130)}
        | {name: st.column_config.NumberColumn(header(name), format="%.3f") for name in scalars(fit.params)},
        key=f"settings_fit_{report.deployment_id}",
    )
    quality = st.columns(4)
    quality[0].metric(
        "median error",
        f"{report.median_abs_rel_error:.1%}",
        help="|predicted - measured| / measured tok/s over the fitted benchmarks",
    )
    quality[1].metric("p90 error", f"{report.p90_abs_rel_error:.1%}")
    quality[2].metric(
        f"median, {fit.cross_validation}",
        f"{report.loo_median_abs_rel_error:.1%}",
        help="each benchmark predicted by a fit that did not see it",
    )
    quality[3].metric(f"p90, {fit.cross_validation}", f"{report.loo_p90_abs_rel_error:.1%}")
    if applied_version is not None:
        st.success(
            f"Applied: this fit is the active calibrated parameter set v{applied_version}.",
            icon=":material/check_circle:",
        )
    elif st.button(
        "Apply as a calibrated parameter set",
        type="primary",
        icon=":material/done:",
        key=f"settings_apply_{report.deployment_id}",
    ):
        pset, summary = state.write(edits.apply_calibration_and_refresh, report)
        st.toast(f"{report.deployment_name}: calibrated parameter set v{pset.version}; {refreshed(summary)}")
        st.rerun()


# --- change history -------------------------------------------------------------------------------------
def change_history(url: str) -> None:
    st.subheader("Change history")
    history = state.changes(url)
    if history.empty:
        st.info(
            "No changes recorded yet: saved profiles, thresholds and calibrations, runs archived or deleted, and "
            "values `specdash ingest --update` applied over stored ones appear here, with who made each."
        )
    else:
        st.caption(
            "Newest first. Who: the signed-in user in team mode (the proxy's header or the login), `dashboard` "
            "otherwise, the login name for the command line."
        )
        tables.show(
            history,
            {"at": st.column_config.DatetimeColumn("at (UTC)", format="YYYY-MM-DD HH:mm")},
            key="settings_history",
        )


render()
