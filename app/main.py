"""specdash dashboard entry point: page config, the schema check, and routing to one view per page."""

import streamlit as st

from specdash.app import state

st.set_page_config(page_title="specdash", page_icon=":material/speed:", layout="wide")

VIEWS = "views"
pages = [
    st.Page(f"{VIEWS}/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page(f"{VIEWS}/leaderboard.py", title="Leaderboard", icon=":material/leaderboard:"),
    st.Page(f"{VIEWS}/checkpoints.py", title="Checkpoints", icon=":material/timeline:"),
    st.Page(f"{VIEWS}/runs.py", title="Runs", icon=":material/folder_open:"),
    st.Page(f"{VIEWS}/upload.py", title="Upload", icon=":material/upload_file:"),
    st.Page(f"{VIEWS}/alerts.py", title="Alerts", icon=":material/notification_important:"),
    st.Page(f"{VIEWS}/live.py", title="Live", icon=":material/sensors:"),
    st.Page(f"{VIEWS}/whatif.py", title="What-if", icon=":material/tune:"),
    st.Page(f"{VIEWS}/settings.py", title="Settings", icon=":material/settings:"),
]

state.require_schema()
st.sidebar.caption(f"Database: `{state.db_label()}`")
st.navigation(pages).run()
