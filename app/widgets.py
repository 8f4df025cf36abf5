"""Widgets whose choices depend on other choices: their value is recomputed when a parent changes, and
pushed to the browser, so a menu never reads one thing while its chart plots another."""

from collections.abc import Hashable, Sequence
from typing import Any

import streamlit as st

_PARENTS = "_widgets_parents"
_UNSET = object()


def follow(
    key: str,
    options: Sequence,
    reset_by: Hashable = (),
    keep_by: Hashable = (),
    default: Any = None,
) -> None:
    """Call before drawing the widget `key` whose `options` derive from the choices above it.

    When a choice in `reset_by` changed since the last run (the subject: another run), the widget goes to
    `default` (the first option unless given); when one in `keep_by` changed (a sibling: another setting),
    it keeps its value if that is still an option, else goes to the default. A value that is no longer an
    option is replaced the same way. The value is always written into the session, which makes Streamlit
    send it to the menu instead of leaving the menu on what it showed before."""
    if not options:
        return
    allowed = list(options)
    seen: dict = st.session_state.setdefault(_PARENTS, {})
    before = seen.get(key, (_UNSET, _UNSET))
    seen[key] = (reset_by, keep_by)
    current = st.session_state.get(key, _UNSET)
    valid = current is not _UNSET and current in allowed
    if valid and before == (reset_by, keep_by):
        return
    fallback = default if default is not None and default in allowed else allowed[0]
    keep = valid and before[0] == reset_by
    st.session_state[key] = current if keep else fallback
