"""Team mode: who is writing, and whether anyone may. `specdash serve --read-only` makes the dashboard
read-only; `--user-header NAME` trusts a reverse proxy's header (e.g. X-Forwarded-User) for the writer's
name; with Streamlit's OIDC login configured ([auth] in .streamlit/secrets.toml) the signed-in user is
the writer. Either way the name is recorded in the history and cannot be typed in."""

import os

import streamlit as st

from specdash.app.text import md

READ_ONLY_ENV = "SPECDASH_READ_ONLY"
USER_HEADER_ENV = "SPECDASH_USER_HEADER"
UNNAMED_WRITER = "dashboard"  # the change history's name for writes when no one is signed in
READ_ONLY_MESSAGE = "This dashboard is read-only (specdash serve --read-only): nothing can be changed here."


def read_only() -> bool:
    return os.environ.get(READ_ONLY_ENV, "") not in ("", "0")


def user_header() -> str | None:
    return os.environ.get(USER_HEADER_ENV) or None


def _headers() -> dict:
    return dict(st.context.headers)


def _login_user() -> str | None:
    try:
        if st.user.is_logged_in:
            user = st.user.get("email") or st.user.get("name")
            return user if isinstance(user, str) else None  # claims are text; st.user types them loosely
    except Exception:  # noqa: BLE001 - no [auth] configured: st.user has no login
        return None
    return None


def login_configured() -> bool:
    try:
        return "auth" in st.secrets
    except Exception:  # noqa: BLE001 - no secrets file
        return False


def signed_in_user() -> str | None:
    """The writer's name from the trusted header, else from st.login; None when neither says."""
    header = user_header()
    if header:
        value = {k.lower(): v for k, v in _headers().items()}.get(header.lower(), "")
        return value.strip()[:200] or None
    if login_configured():
        return _login_user()
    return None


def trusted() -> bool:
    """Whether writers are named by the proxy or the login rather than by what they type."""
    return bool(user_header()) or login_configured()


def who_input(label: str, key: str, value: str = "") -> str:
    """The writer's name: the trusted identity when configured (shown, not editable), else a text box."""
    if not trusted():
        return st.text_input(label, value=value, key=key)
    user = signed_in_user()
    if user:
        st.caption(f"Signed in as **{md(user)}** (recorded in the history)")
        return user
    if login_configured() and not user_header():
        st.button("Log in to make changes", on_click=st.login, key=f"{key}_login")
    else:
        st.warning(
            "Your name did not come with the request (the reverse proxy sets it): changes are refused."
        )
    return ""
