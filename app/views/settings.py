"""Settings: the gap threshold (global and per deployment), deployment cost profiles (create and edit), and
calibration of a deployment's profile from its trusted benchmarks."""

import pandas as pd
import streamlit as st

from specdash.app import advisory_panel, state
from specdash.app.text import md
from specdash.db import profiles
from specdash.db.profiles import ProfileError

NEW = "+ new deployment"
INTERCONNECTS = ("pcie", "nvlink", "infiniband", "ethernet", "other")

url = state.db_url()
st.title("Settings")


def refreshed(summary) -> str:
    return (
        f"{summary.predictions} prediction(s) and {summary.gaps} gap(s) recomputed, "
        f"{summary.new_alerts} new alert(s)."
    )


# --- thresholds ----------------------------------------------------------------------------------------
st.subheader("Gap threshold")
st.caption(
    "A benchmark whose tok/s departs from its prediction by at least this share is an alert. A deployment "
    "may set its own; the others use the global one."
)
deployments = state.deployments_frame(url)
global_threshold = state.gap_threshold(url)
left, right = st.columns([1, 2], gap="large")
with left:
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
                summary = state.write(profiles.set_global_threshold, value / 100)
            except ProfileError as exc:
                st.error(str(exc))
            else:
                st.toast(f"Global threshold {value:g}%: {refreshed(summary)}")
                st.rerun()
with right:
    if deployments.empty:
        st.info("No deployments yet.")
    else:
        own = deployments[["id", "name", "gap_threshold"]].assign(
            threshold_pct=deployments["gap_threshold"] * 100
        )[["name", "threshold_pct"]]
        edited = st.data_editor(
            own,
            hide_index=True,
            width="stretch",
            disabled=["name"],
            key="settings_deployment_thresholds",
            column_config={
                "name": "deployment",
                "threshold_pct": st.column_config.NumberColumn(
                    "own threshold (%)",
                    min_value=0.1,
                    max_value=100.0,
                    format="%.1f",
                    help=f"empty: the global {global_threshold:.0%}",
                ),
            },
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
                    summary = state.write(profiles.set_deployment_threshold, deployment_id, threshold)
            except ProfileError as exc:
                st.error(str(exc))
            else:
                st.toast(f"Thresholds saved: {refreshed(summary)}")
                st.rerun()

# --- deployment profiles ----------------------------------------------------------------------------------
st.subheader("Deployment profiles")
st.caption(
    "The cost model's inputs per deployment: baseline decode tok/s (a measured no-speculation benchmark "
    "takes precedence), the share of a step spent in TP collectives, draft and overhead ms, and how verify "
    "cost grows per extra verified token. A changed profile becomes a new parameter set version."
)
if not deployments.empty:
    st.dataframe(
        deployments.drop(columns=["id", "is_demo", "gap_threshold"]),
        hide_index=True,
        width="stretch",
        column_config={
            "comm_fraction": st.column_config.NumberColumn("all-reduce share", format="%.2f"),
            "baseline_tps": st.column_config.NumberColumn("baseline tok/s", format="%.1f"),
            "draft_step_ms": st.column_config.NumberColumn("draft ms/step", format="%.3f"),
            "round_overhead_ms": st.column_config.NumberColumn("overhead ms/round", format="%.2f"),
        },
    )
names = deployments["name"].tolist() if not deployments.empty else []
choice = st.selectbox("Edit", [NEW, *names], key="settings_profile_choice")
current = {} if choice == NEW else deployments[deployments["name"] == choice].iloc[0].to_dict()


def given(name, default=None):
    value = current.get(name, default)
    return default if value is None or (isinstance(value, float) and pd.isna(value)) else value


with st.form(f"settings_profile_{choice}"):
    cols = st.columns(3)
    values = {
        "name": cols[0].text_input("Name", given("name", ""), key="profile_name"),
        "gpu": cols[1].text_input("GPU", given("gpu", ""), key="profile_gpu"),
        "engine": cols[2].text_input("Engine", given("engine", ""), key="profile_engine"),
        "num_gpus": cols[0].number_input("GPUs", 1, 1024, int(given("num_gpus", 1)), key="profile_num_gpus"),
        "tp_size": cols[1].number_input("TP size", 1, 1024, int(given("tp_size", 1)), key="profile_tp_size"),
        "interconnect": cols[2].selectbox(
            "Interconnect",
            INTERCONNECTS,
            index=INTERCONNECTS.index(given("interconnect", "pcie"))
            if given("interconnect", "pcie") in INTERCONNECTS
            else len(INTERCONNECTS) - 1,
            key="profile_interconnect",
        ),
        "baseline_tps": cols[0].number_input(
            "Baseline decode tok/s",
            0.0,
            100_000.0,
            float(given("baseline_tps", 0.0)),
            key="profile_baseline_tps",
        ),
        "comm_fraction": cols[1].number_input(
            "All-reduce share of a step",
            0.0,
            0.99,
            float(given("comm_fraction", 0.0)),
            step=0.05,
            key="profile_comm",
        ),
        "draft_step_ms": cols[2].number_input(
            "Draft ms per step",
            0.0,
            1000.0,
            float(given("draft_step_ms", 0.0)),
            step=0.05,
            format="%.3f",
            key="profile_draft_ms",
        ),
        "round_overhead_ms": cols[0].number_input(
            "Overhead ms per round",
            0.0,
            1000.0,
            float(given("round_overhead_ms", 0.0)),
            key="profile_overhead",
        ),
        "verify_growth_compute": cols[1].number_input(
            "Verify compute growth per extra token",
            0.0,
            10.0,
            float(given("verify_growth_compute", 0.0)),
            step=0.01,
            format="%.3f",
            key="profile_growth_compute",
        ),
        "verify_growth_comm": cols[2].number_input(
            "Verify all-reduce growth per extra token",
            0.0,
            10.0,
            float(given("verify_growth_comm", 0.0)),
            step=0.01,
            format="%.3f",
            key="profile_growth_comm",
        ),
    }
    values["notes"] = st.text_input("Notes", given("notes", ""), key="profile_notes")
    # 0 reads as "unknown": the profile then relies on a measured no-speculation benchmark
    values["baseline_tps"] = values["baseline_tps"] or None
    values["gap_threshold"] = given("gap_threshold")
    label = "Create deployment" if choice == NEW else "Save profile"
    if st.form_submit_button(label, type="primary", icon=":material/save:"):
        try:
            deployment, summary = state.write(
                profiles.save_deployment, values, None if choice == NEW else int(current["id"])
            )
        except ProfileError as exc:
            st.error(str(exc))
        else:
            st.toast(f"{deployment.name} saved: {refreshed(summary)}")
            st.rerun()

# --- calibration ------------------------------------------------------------------------------------------
st.subheader("Calibration")
st.caption(
    "Fit a deployment's draft ms per step, round overhead, verify growth and the factor from training accuracy "
    "to served acceptance to its trusted benchmarks (robust least squares; superseded benchmarks and those with "
    "a critical diagnosis are left out). Applying a fit adds a calibrated parameter set, never an overwrite: "
    "its predictions appear next to theory's on every page."
)
EVERY = "every deployment"
pick = st.columns([3, 1], vertical_alignment="bottom")
target = pick[0].selectbox("Deployment to calibrate", [EVERY, *names], key="settings_calibrate_deployment")
if pick[1].button("Run calibration", icon=":material/model_training:", key="settings_calibrate"):
    target_id = None if target == EVERY else int(deployments[deployments["name"] == target].iloc[0]["id"])
    st.session_state["calibration"] = state.run_calibration(target_id)

reports, skipped = st.session_state.get("calibration", ([], []))
for report in reports:
    with st.container(border=True):
        excluded = ", ".join(f"{reason}: {n}" for reason, n in report.exclusions.items())
        st.markdown(
            f"**{md(report.deployment_name)}**: fitted to {report.n_benchmarks} benchmark(s)"
            + (f", {report.excluded} left out ({md(excluded)})" if report.excluded else "")
        )
        fit = report.fit
        st.dataframe(
            pd.DataFrame(
                [
                    {"": "profile (prior)", **vars(fit.prior)},
                    {"": "calibrated", **vars(fit.params)},
                ]
            ),
            hide_index=True,
            width="stretch",
            column_config={name: st.column_config.NumberColumn(format="%.3f") for name in vars(fit.params)},
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
        if st.button(
            "Apply as a calibrated parameter set",
            type="primary",
            icon=":material/done:",
            key=f"settings_apply_{report.deployment_id}",
        ):
            pset, summary = state.write(profiles.apply_calibration_and_refresh, report)
            st.session_state["calibration"] = (
                [r for r in reports if r.deployment_id != report.deployment_id],
                skipped,
            )
            st.toast(
                f"{report.deployment_name}: calibrated parameter set v{pset.version}; {refreshed(summary)}"
            )
            st.rerun()
for item in skipped:
    st.info(f"{md(item.deployment_name)}: not calibrated: {md(item.reason)}.")

sets = state.parameter_sets(url)
if not sets.empty:
    st.markdown("**Parameter sets** (each prediction records the set it used)")
    st.dataframe(
        sets,
        hide_index=True,
        width="stretch",
        column_config={
            "is_active": st.column_config.CheckboxColumn("active"),
            "cv_median_error": st.column_config.NumberColumn(
                "cross-validated median error", format="percent"
            ),
            "created_at": st.column_config.DatetimeColumn("created (UTC)", format="YYYY-MM-DD HH:mm"),
        },
    )

advisory_panel.settings_section(url)
