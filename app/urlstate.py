"""Every page's state in the URL: widgets start from the query parameters when a link or a shared URL
gives them, and write their value back, so the address bar always reproduces the view.

A parameter is read only when it differs from what this page last wrote itself: the page's own echo never
overrides what the user chose since (a changed run list gets its own default checkpoints), while a link
from another page, or a URL opened in a new browser, sets the widgets."""

from collections.abc import Callable, Iterable

import streamlit as st

_WRITTEN = "_urlstate_written"


def _as_written(value) -> str | list[str] | None:
    if value is None or (isinstance(value, list | tuple) and not value):
        return None
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return str(value)


class UrlState:
    """The query parameters of one page."""

    def __init__(self, page: str):
        self.page = page
        self.written: dict = st.session_state.setdefault(_WRITTEN, {}).setdefault(page, {})

    def _given(self, param: str, many: bool):
        if param not in st.query_params:
            return None
        raw = st.query_params.get_all(param) if many else st.query_params[param]
        if param in self.written and self.written[param] == (raw if many else str(raw)):
            return None  # this page's own echo
        return raw

    def restore(
        self, widget_key: str, param: str, options: Iterable | None = None, parse: Callable = str
    ) -> None:
        """Before the widget is drawn: take its value from `?param=` when it is one of `options` (a stale or
        foreign link falls back to the widget's default)."""
        raw = self._given(param, many=False)
        if raw is None:
            return
        try:
            value = parse(raw)
        except (TypeError, ValueError):
            return
        if options is None or value in list(options):
            st.session_state[widget_key] = value

    def restore_many(self, widget_key: str, param: str, options: Iterable, parse: Callable = str) -> None:
        """The same for a multiselect: `?param=a&param=b`; values not among `options` are dropped."""
        raw = self._given(param, many=True)
        if raw is None:
            return
        allowed, values = list(options), []
        for item in raw:
            try:
                value = parse(item)
            except (TypeError, ValueError):
                continue
            if value in allowed and value not in values:
                values.append(value)
        if values:
            st.session_state[widget_key] = values

    def publish(self, param: str, value, default=None) -> None:
        """After the widget: its value in the URL (left out when it is the default, to keep links short)."""
        written = None if value == default else _as_written(value)
        self.written[param] = written
        if written is None:
            st.query_params.pop(param, None)
        else:
            st.query_params[param] = written
