"""Overview: what is stored, the open alerts, and predicted vs measured for every benchmark."""

import streamlit as st

from specdash.app import charts, state

url = state.db_url()
st.title("specdash")
st.caption("Predicted vs measured decode throughput of speculative-decoding drafters.")

counts = state.counts(url)
threshold = state.gap_threshold(url)
alerts = state.gap_rows(url, None, "open", None)

cols = st.columns(5)
cols[0].metric("Runs", counts["runs"])
cols[1].metric("Checkpoints", counts["checkpoints"])
cols[2].metric("Benchmarks", counts["benchmarks"])
cols[3].metric("Deployments", counts["deployments"])
cols[4].metric("Open alerts", len(alerts))

st.subheader("Open alerts")
if not alerts:
    st.success(f"No open gap above the threshold ({threshold:.0%}).")
for row in alerts[:20]:
    severity = row["severity"] or "info"
    box = {"critical": st.error, "warning": st.warning}.get(severity, st.info)
    lines = [
        f"**{row['run']} / {row['checkpoint']}** on {row['deployment']}, "
        f"{row['speculative_algorithm']} {row['num_steps']}/{row['topk']}/{row['num_draft_tokens']}: "
        f"measured {row['measured_tps']:.1f} tok/s vs {row['source']} {row['predicted_tps']:.1f} "
        f"(gap {row['gap']:+.1%})"
    ]
    lines += [f"- {d['severity']}: {d['message']}" for d in row["diagnoses"]]
    # names come from files: shown as text, never as HTML
    box("\n".join(lines), icon=":material/warning:")

st.subheader("Predicted vs measured")
frame = state.parity_frame(url)
st.plotly_chart(charts.parity_figure(frame, threshold), width="stretch")
