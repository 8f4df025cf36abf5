"""Secrets as they may be shown: a database URL without its password (in `user:pw@` or in a query
parameter), a webhook URL without the path or query that carries its token, and any text (an error, a
log line) with those secrets' values replaced. Pure string work: nothing here parses a URL strictly."""

import re
from urllib.parse import unquote

MASK = "***"
# Query parameters that carry a secret in a database URL (libpq's and the drivers' names).
SECRET_PARAMETERS = (
    "password",
    "passwd",
    "pwd",
    "pass",
    "sslpassword",
    "secret",
    "token",
    "api_key",
    "apikey",
)
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/@:?#\s]*):(?P<secret>[^/?#\s]*)@")
_PARAMETER = re.compile(
    r"(?P<head>[?&;](?:" + "|".join(SECRET_PARAMETERS) + r")=)(?P<secret>[^&;#\s'\"]*)", re.IGNORECASE
)
_WEBHOOK = re.compile(
    r"^(?P<origin>[A-Za-z][A-Za-z0-9+.\-]*://[^/?#@\s]*@?[^/?#\s]*)(?P<rest>.*)$", re.DOTALL
)


def masked_url(url: str) -> str:
    """A database URL with every password it holds replaced by ***, whatever form it takes."""
    url = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@", url)
    return _PARAMETER.sub(lambda m: m[0] if m["secret"].startswith(MASK) else f"{m['head']}{MASK}", url)


def url_secrets(url: str) -> list[str]:
    """The secret values a URL holds (as written and percent-decoded), longest first."""
    found = {m["secret"] for m in _USERINFO.finditer(url)} | {m["secret"] for m in _PARAMETER.finditer(url)}
    found |= {unquote(value) for value in found}
    return sorted((value for value in found if len(value) >= 3), key=len, reverse=True)


def masked_webhook(url: str) -> str:
    """A webhook URL as it may be shown: its scheme and host, the path that carries its token hidden."""
    match = _WEBHOOK.match(url.strip())
    if not match:
        return MASK
    origin = masked_url(match["origin"])
    return f"{origin}/{MASK}" if match["rest"] not in ("", "/") else origin


def scrubbed(text: str, *urls: str | None) -> str:
    """`text` with each URL shown masked, and each secret value of theirs replaced wherever it appears."""
    for url in urls:
        if not url:
            continue
        text = text.replace(url, masked_url(url))
        for secret in url_secrets(url):
            text = text.replace(secret, MASK)
    return masked_url(text)
