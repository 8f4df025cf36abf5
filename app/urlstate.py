"""Every page's state in the URL: widgets start from the query parameters when a link or a shared URL
gives them, and write their value back, so the address bar always reproduces the view."""

from collections.abc import Callable, Iterable

import streamlit as st


def restore(widget_key: str, param: str, options: Iterable | None = None, parse: Callable = str) -> None:
    """Before the widget is drawn: take its value from `?param=` when the session has none yet and the
    value is one of `options` (a stale or foreign link falls back to the widget's default)."""
    if widget_key in st.session_state or param not in st.query_params:
        return
    try:
        value = parse(st.query_params[param])
    except (TypeError, ValueError):
        return
    if options is None or value in list(options):
        st.session_state[widget_key] = value


def restore_many(widget_key: str, param: str, options: Iterable, parse: Callable = str) -> None:
    """The same for a multiselect: `?param=a&param=b`; values not among `options` are dropped."""
    if widget_key in st.session_state or param not in st.query_params:
        return
    allowed = list(options)
    values = []
    for raw in st.query_params.get_all(param):
        try:
            value = parse(raw)
        except (TypeError, ValueError):
            continue
        if value in allowed and value not in values:
            values.append(value)
    if values:
        st.session_state[widget_key] = values


def publish(param: str, value, default=None) -> None:
    """After the widget: its value in the URL (left out when it is the default, to keep links short)."""
    if value is None or value == default or (isinstance(value, list | tuple) and not value):
        st.query_params.pop(param, None)
    elif isinstance(value, list | tuple):
        st.query_params[param] = [str(v) for v in value]
    else:
        st.query_params[param] = str(value)
