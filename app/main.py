"""specdash dashboard entry point: page config, the schema check, and routing to one view per page."""

import streamlit as st

from specdash.app import state

st.set_page_config(page_title="specdash", page_icon=":material/speed:", layout="wide")

VIEWS = "views"
pages = [
    st.Page(f"{VIEWS}/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page(f"{VIEWS}/checkpoints.py", title="Checkpoints", icon=":material/timeline:"),
]

state.require_schema()
st.sidebar.caption(f"Database: `{state.db_url()}`")
st.navigation(pages).run()
