"""Settings' parameter sets: every version of every deployment's cost parameters, what each set in use is
for, and restoring an earlier version."""

import streamlit as st

from specdash.answers import edits
from specdash.app import state, tables
from specdash.app.tables import header
from specdash.app.text import md
from specdash.costmodel.domain import PredictionSource
from specdash.db.profiles import ProfileError

# decimals each parameter-set column is shown with
SET_DIGITS = {
    "baseline_tps": 1,
    "comm_fraction": 2,
    "draft_step_ms": 3,
    "round_overhead_ms": 2,
    "verify_growth_compute": 3,
    "verify_growth_comm": 3,
    "acc_to_acceptance": 3,
}
# Why a deployment has two sets in use at once (refresh predicts from both; answers/verdicts.VERDICT_ORDER judges)
TWO_SETS = (
    "A deployment has two sets in use at once, on purpose, one per kind of prediction:\n"
    "- **theory**: the profile as entered, with published priors for every cost it leaves blank; every "
    "benchmark gets a theory prediction from it.\n"
    "- **calibrated**: the latest fit applied in *Calibration* above; it gives a second prediction, and where "
    "there is one it is the prediction the alerts are judged against."
)


def set_role(source: str, active: bool) -> str:
    """What a parameter set is for, in words (two are in use per deployment: see TWO_SETS)."""
    if not active:
        return "earlier version"
    if source == PredictionSource.CALIBRATED:
        return f"in use: {source}, judges alerts"
    return f"in use: {source}"


def refreshed(summary) -> str:
    return (
        f"{summary.predictions} prediction(s) and {summary.gaps} gap(s) recomputed, "
        f"{summary.new_alerts} new alert(s)."
    )


def show(url: str) -> None:
    sets = state.parameter_sets(url)
    st.subheader("Parameter sets")
    if sets.empty:
        st.info("No parameter sets yet: they are made when a deployment's first benchmark gets a prediction.")
    else:
        st.caption(
            "Every version of every deployment's cost parameters; each prediction records the set it used. "
            "Restoring an earlier version saves it again as the newest one and recomputes the predictions."
        )
        st.markdown(TWO_SETS)
        every = "every deployment"
        shown_for = st.selectbox(
            "Deployment", [every, *dict.fromkeys(sets["deployment"])], key="settings_sets_deployment"
        )
        listed = sets if shown_for == every else sets[sets["deployment"] == shown_for]
        tables.show(
            listed.assign(
                role=[
                    set_role(src, active)
                    for src, active in zip(listed["source"], listed["is_active"], strict=True)
                ],
                cv_median_error=listed["cv_median_error"].astype("float64") * 100,
            )[
                [
                    "deployment",
                    "version",
                    "source",
                    "role",
                    *SET_DIGITS,
                    "benchmarks",
                    "cv_median_error",
                    "note",
                ]
            ].assign(created_at=listed["created_at"]),
            {
                "version": st.column_config.NumberColumn(format="v%d", width=60),
                "role": st.column_config.TextColumn("what it is for", width=220),
                **{
                    column: st.column_config.NumberColumn(header(column), format=f"%.{digits}f")
                    for column, digits in SET_DIGITS.items()
                },
                "benchmarks": st.column_config.NumberColumn("benchmarks fitted", help="calibrated sets only"),
                "cv_median_error": st.column_config.NumberColumn(
                    "cross-validated median error", format="%.1f%%", help="calibrated sets only"
                ),
                "created_at": st.column_config.DatetimeColumn("created (UTC)", format="YYYY-MM-DD HH:mm"),
            },
            key="settings_parameter_sets",
        )
        earlier = listed[~listed["is_active"]]
        if earlier.empty:
            st.caption("No earlier version to restore.")
        else:
            labels = {
                int(
                    r["id"]
                ): f"{r['deployment']}: v{r['version']} ({r['source']}, {r['created_at']:%Y-%m-%d %H:%M})"
                for r in earlier.to_dict("records")
            }
            pick = st.columns([3, 1], vertical_alignment="bottom")
            restore_id = pick[0].selectbox(
                "Earlier version",
                list(labels),
                format_func=lambda i: labels[i],
                key="settings_restore_choice",
            )
            if pick[1].button("Restore this version", icon=":material/restore:", key="settings_restore"):
                try:
                    pset, summary = state.write(edits.restore_parameter_set, restore_id)
                except ProfileError as exc:
                    st.error(str(exc))
                else:
                    st.toast(f"{md(labels[restore_id])} restored as v{pset.version}: {refreshed(summary)}")
                    st.rerun()
