"""Open alerts as short cards: the plain lead line first, the facts under it, the cost model's reasoning
one click away; info-level alerts grouped in a collapsed list so the ones that matter stand out."""

import streamlit as st

from specdash.app.alert_text import GAP_CONVENTION, lead_line
from specdash.app.text import SEVERITY_ICONS, md
from specdash.labels import gap_text, setting_label

# Severities that get a card of their own; info-level alerts are listed in an expander.
CARD_SEVERITIES = ("critical", "warning", "none")


def card(row: dict) -> None:
    """One alert: the lead line, what was measured where, the reasoning in an expander, a link to it."""
    severity = row["severity"] or "none"
    box = {"critical": st.error, "warning": st.warning}.get(severity, st.info)
    where = f"{md(row['run'])} / {md(row['checkpoint'])} on {md(row['deployment'])}, {setting_label(row)}"
    if row["predicted_tps"] is None:  # an acceptance collapse, judged on its accept length alone
        facts = where
    else:
        facts = (
            f"{where}: {row['measured_tps']:.1f} tok/s measured, {row['predicted_tps']:.1f} predicted "
            f"(gap {gap_text(row['gap'])})"
        )
    box(f"**{md(lead_line(row))}**  \n{facts}", icon=SEVERITY_ICONS[severity])
    with st.expander("The model's reasoning", icon=":material/psychology:"):
        lines = [f"- verdict: {md(row['reason'])}"] if row.get("reason") else []
        lines += [f"- **{d['code']}**: {md(d['message'])}" for d in row["diagnoses"]]
        st.markdown("\n".join(lines) or "No rule explains this gap.")
    st.page_link(
        "views/alerts.py",
        label=f"Investigate alert #{row['alert_id']}",
        icon=":material/search:",
        query_params={"alert": str(row["alert_id"])},
    )


def info_group(rows: list[dict], total: int) -> None:
    """The info-level alerts, collapsed: one lead line each with its link."""
    with st.expander(f"{total} info-level alert{'s' if total != 1 else ''}", icon=SEVERITY_ICONS["info"]):
        st.caption("Info: gaps the model cannot attribute or that need no action (e.g. published results).")
        for row in rows:
            st.page_link(
                "views/alerts.py",
                label=f"#{row['alert_id']} {row['run']}: {lead_line(row)}",
                query_params={"alert": str(row["alert_id"])},
            )
        if total > len(rows):
            st.page_link(
                "views/alerts.py",
                label=f"All {total} info-level alerts",
                icon=":material/list:",
                query_params={"severity": "info"},
            )


def convention() -> None:
    st.caption(GAP_CONVENTION)
