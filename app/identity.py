"""Team mode: who is writing, and whether anyone may. `specdash serve --read-only` makes the dashboard
read-only; `--user-header NAME` trusts a reverse proxy's header (e.g. X-Forwarded-User) for the writer's
name, on a request from a trusted proxy's address (`--trusted-proxy`, loopback by default) or carrying
the proxy's shared secret (`--proxy-secret-header`); with Streamlit's OIDC login configured ([auth] in
.streamlit/secrets.toml) the signed-in user is the writer. Either way the name is recorded in the history
and cannot be typed in."""

import hmac
import ipaddress
import os

import streamlit as st

from specdash.app.text import md

READ_ONLY_ENV = "SPECDASH_READ_ONLY"
USER_HEADER_ENV = "SPECDASH_USER_HEADER"
TRUSTED_PROXIES_ENV = "SPECDASH_TRUSTED_PROXIES"  # addresses or networks, comma-separated
PROXY_SECRET_HEADER_ENV = "SPECDASH_PROXY_SECRET_HEADER"
PROXY_SECRET_ENV = "SPECDASH_PROXY_SECRET"
LOOPBACK = ("127.0.0.0/8", "::1/128")
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


def _peer() -> str:
    """The TCP peer of this session's connection (Streamlit reports a loopback peer as None, and a test
    runtime has none)."""
    address = st.context.ip_address
    return address if isinstance(address, str) and address else "127.0.0.1"


def trusted_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The proxies the user header is taken from: --trusted-proxy's, else loopback unless a shared secret
    is the only guard."""
    given = [part.strip() for part in os.environ.get(TRUSTED_PROXIES_ENV, "").split(",") if part.strip()]
    if not given and not os.environ.get(PROXY_SECRET_HEADER_ENV):
        given = list(LOOPBACK)
    return [ipaddress.ip_network(part, strict=False) for part in given]


def from_trusted_proxy(headers: dict[str, str]) -> bool:
    """Whether this request came through the proxy that sets the user header: its peer address is one
    of the trusted proxies', or it carries the proxy's shared secret."""
    secret_header, secret = os.environ.get(PROXY_SECRET_HEADER_ENV), os.environ.get(PROXY_SECRET_ENV)
    if secret_header and secret:
        sent = headers.get(secret_header.lower(), "")
        if sent and hmac.compare_digest(sent.encode(), secret.encode()):
            return True
    try:
        peer = ipaddress.ip_address(_peer().split("%", 1)[0])
    except ValueError:
        return False
    return any(peer in network for network in trusted_networks() if network.version == peer.version)


def signed_in_user() -> str | None:
    """The writer's name from the trusted header (on a request from the trusted proxy), else from
    st.login; None when neither says."""
    header = user_header()
    if header:
        headers = {k.lower(): v for k, v in _headers().items()}
        if not from_trusted_proxy(headers):
            return None
        value = headers.get(header.lower(), "")
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
    sign_in_prompt(key)
    return ""


def sign_in_prompt(key: str) -> None:
    """What a visitor who is not signed in is told (or offered: the login)."""
    if login_configured() and not user_header():
        st.button("Log in to make changes", on_click=st.login, key=f"{key}_login")
    else:
        st.warning(
            "Your name did not come with the request (the reverse proxy sets it, on requests that come "
            "through it): changes are refused."
        )
