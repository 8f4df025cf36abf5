"""The dashboard's connection to the store: one engine per URL, cached queries keyed on plain filters."""

import streamlit as st
from sqlalchemy import Engine

from specdash.config import resolve_db_url
from specdash.db import queries
from specdash.db.engine import make_engine, reading
from specdash.db.schema import SchemaOutOfDate, check_schema


def db_url() -> str:
    return resolve_db_url()


@st.cache_resource(show_spinner=False)
def get_engine(url: str) -> Engine:
    return make_engine(url)


def engine() -> Engine:
    return get_engine(db_url())


def require_schema() -> None:
    """Stop the page with the fix spelled out when the database is missing or out of date."""
    try:
        check_schema(engine())
    except SchemaOutOfDate as exc:
        st.error(str(exc))
        st.stop()


@st.cache_data(show_spinner=False)
def counts(url: str) -> dict:
    with reading(get_engine(url)) as session:
        return queries.counts(session)


@st.cache_data(show_spinner=False)
def gap_rows(url: str, threshold: float | None, status: str, source: str | None) -> list[dict]:
    with reading(get_engine(url)) as session:
        return queries.gap_rows(session, threshold=threshold, status=status, source=source)


@st.cache_data(show_spinner=False)
def parity_frame(url: str, source: str = "theory"):
    with reading(get_engine(url)) as session:
        return queries.parity_frame(session, source)


@st.cache_data(show_spinner=False)
def runs_frame(url: str):
    with reading(get_engine(url)) as session:
        return queries.runs_frame(session)


@st.cache_data(show_spinner=False)
def deployments_frame(url: str):
    with reading(get_engine(url)) as session:
        return queries.deployments_frame(session)


@st.cache_data(show_spinner=False)
def checkpoint_overlay(url: str, run_id: int, deployment_id: int | None):
    with reading(get_engine(url)) as session:
        return queries.checkpoint_overlay(session, run_id, deployment_id)


@st.cache_data(show_spinner=False)
def gap_threshold(url: str) -> float:
    from specdash.db.settings import get_gap_threshold

    with reading(get_engine(url)) as session:
        return get_gap_threshold(session)


def clear_caches() -> None:
    """After anything writes to the store (an upload, a status change)."""
    st.cache_data.clear()
