"""The Streamlit dashboard: app/main.py routes to one view per page in app/views/."""
