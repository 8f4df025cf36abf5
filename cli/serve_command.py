"""`specdash serve`: the Streamlit dashboard on this database."""

import ipaddress
import os
import sys
from importlib.resources import files

import click

from specdash.cli.common import db_option, db_url, open_db
from specdash.config import DB_URL_ENV
from specdash.masking import masked_url

READ_ONLY_ENV = "SPECDASH_READ_ONLY"  # read by specdash.app.identity
USER_HEADER_ENV = "SPECDASH_USER_HEADER"
TRUSTED_PROXIES_ENV = "SPECDASH_TRUSTED_PROXIES"
PROXY_SECRET_HEADER_ENV = "SPECDASH_PROXY_SECRET_HEADER"
PROXY_SECRET_ENV = "SPECDASH_PROXY_SECRET"  # the shared secret itself: from the environment, never argv
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")


def _networks(values: tuple[str, ...]) -> list[str]:
    networks = []
    for value in values:
        try:
            networks.append(str(ipaddress.ip_network(value.strip(), strict=False)))
        except ValueError:
            raise click.BadParameter(
                f"{value!r} is not an address or network", param_hint="--trusted-proxy"
            ) from None
    return networks


def _guard(
    host: str, user_header: str | None, proxies: tuple[str, ...], secret_header: str | None
) -> list[str]:
    """The trusted proxies' networks; refuses a user header any client could forge."""
    if (proxies or secret_header) and not user_header:
        raise click.UsageError("--trusted-proxy and --proxy-secret-header guard --user-header: give it too")
    if secret_header and not os.environ.get(PROXY_SECRET_ENV):
        raise click.UsageError(f"--proxy-secret-header needs the secret in ${PROXY_SECRET_ENV}")
    if user_header and host not in LOCAL_HOSTS and not proxies and not secret_header:
        raise click.UsageError(
            f"--user-header on --host {host} would trust a header any client reaching the port can send: "
            "name the reverse proxy with --trusted-proxy ADDRESS (repeatable), or have it send a shared "
            f"secret with --proxy-secret-header NAME and ${PROXY_SECRET_ENV}"
        )
    return _networks(proxies)


@click.command()
@click.option("--port", default=8501, show_default=True, help="Port to listen on.")
@click.option("--host", default="localhost", show_default=True, help="Address to listen on.")
@click.option(
    "--read-only", is_flag=True, help="Nothing can be changed from the dashboard (no upload, no edits)."
)
@click.option(
    "--user-header",
    metavar="NAME",
    help="Trust this request header from a reverse proxy (e.g. X-Forwarded-User) as the writer's name.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    multiple=True,
    metavar="ADDRESS",
    help="Take --user-header only from this address or network (repeatable; default: loopback).",
)
@click.option(
    "--proxy-secret-header",
    metavar="NAME",
    help="Take --user-header from a request whose header NAME holds $SPECDASH_PROXY_SECRET.",
)
@db_option
@click.pass_context
def serve(
    ctx: click.Context,
    port: int,
    host: str,
    read_only: bool,
    user_header: str | None,
    trusted_proxies: tuple[str, ...],
    proxy_secret_header: str | None,
) -> None:
    """Start the dashboard on this database.

    \b
    Example:
      specdash serve --port 8501
      specdash serve --read-only --host 0.0.0.0
      specdash serve --user-header X-Forwarded-User   # behind a proxy on this host that signs users in
      specdash serve --host 0.0.0.0 --user-header X-Forwarded-User --trusted-proxy 10.0.0.5
    """
    networks = _guard(host, user_header, trusted_proxies, proxy_secret_header)
    engine = open_db(ctx)  # refuse an out-of-date schema before starting a server
    app = files("specdash.app").joinpath("main.py")
    env = dict(os.environ, **{DB_URL_ENV: db_url(ctx)})
    env[READ_ONLY_ENV] = "1" if read_only else ""
    env[USER_HEADER_ENV] = user_header or ""
    env[TRUSTED_PROXIES_ENV] = ",".join(networks)
    env[PROXY_SECRET_HEADER_ENV] = proxy_secret_header or ""
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.port",
        str(port),
        "--server.address",
        host,
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
        "--client.showErrorDetails",
        "none",  # visitors get a sentence and an error id, the log the traceback
    ]
    where = masked_url(engine.url.render_as_string(hide_password=False))
    mode = ", read-only" if read_only else f", writers named by {user_header}" if user_header else ""
    if user_header and not read_only:
        sources = [*networks] or ([] if proxy_secret_header else ["loopback"])
        mode += " from " + " or ".join(
            [", ".join(sources)] * bool(sources)
            + [f"requests with {proxy_secret_header}"] * bool(proxy_secret_header)
        )
    click.echo(f"specdash dashboard on http://{host}:{port} (database {where}{mode})")
    sys.stdout.flush()
    # Streamlit replaces this process (same pid): a SIGTERM or SIGINT sent to `specdash serve` reaches the
    # server itself, and no orphaned child keeps serving the port.
    os.execve(sys.executable, command, env)
