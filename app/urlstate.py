"""Every page's state in the URL: widgets start from the query parameters when a link or a shared URL
gives them, and write their value back, so the address bar always reproduces the view.

A parameter is read only when it differs from what this page last wrote itself: the page's own echo never
overrides what the user chose since (a changed run list gets its own default checkpoints), while a link
from another page, or a URL opened in a new browser, sets the widgets."""

from collections.abc import Callable, Iterable

import streamlit as st

from specdash.costmodel.domain import Setting, SettingAtLoad

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


def setting_param(row) -> str:
    """A speculation setting in a URL: `EAGLE3:3:1:4:1` (algorithm, steps, top-k, draft tokens, concurrency)."""
    parts = [
        row["speculative_algorithm"],
        row["num_steps"],
        row["topk"],
        row["num_draft_tokens"],
        row["concurrency"],
    ]
    return ":".join("" if p is None or p != p else str(p) for p in parts)


def setting_from_param(text: str) -> SettingAtLoad:
    """The setting a URL names, as setting_param writes it."""
    algorithm, steps, topk, draft_tokens, concurrency = text.split(":")
    number = lambda v: int(v) if v else None  # noqa: E731
    setting = Setting.of(algorithm, number(steps), number(topk), number(draft_tokens))
    return SettingAtLoad(**vars(setting), concurrency=int(concurrency))


def checkpoint_link(row, dataset: str | None) -> dict[str, str]:
    """Query parameters that open the Checkpoints page on this entry's overlay."""
    params = {
        "run": str(row["run"]),
        "ckpt": str(int(row["checkpoint_id"])),
        "deployment": str(row["deployment"]),
        "setting": setting_param(row),
    }
    if dataset is not None:
        params["dataset"] = dataset
    return params
