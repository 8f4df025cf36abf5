"""`specdash serve`: the Streamlit dashboard on this database."""

import os
import sys
from importlib.resources import files

import click

from specdash.cli.common import db_option, db_url, open_db
from specdash.config import DB_URL_ENV
from specdash.masking import masked_url

READ_ONLY_ENV = "SPECDASH_READ_ONLY"  # read by specdash.app.identity
USER_HEADER_ENV = "SPECDASH_USER_HEADER"


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
@db_option
@click.pass_context
def serve(ctx: click.Context, port: int, host: str, read_only: bool, user_header: str | None) -> None:
    """Start the dashboard on this database.

    \b
    Example:
      specdash serve --port 8501
      specdash serve --read-only --host 0.0.0.0
      specdash serve --user-header X-Forwarded-User   # behind a proxy that signs users in
    """
    engine = open_db(ctx)  # refuse an out-of-date schema before starting a server
    app = files("specdash.app").joinpath("main.py")
    env = dict(os.environ, **{DB_URL_ENV: db_url(ctx)})
    env[READ_ONLY_ENV] = "1" if read_only else ""
    env[USER_HEADER_ENV] = user_header or ""
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
    click.echo(f"specdash dashboard on http://{host}:{port} (database {where}{mode})")
    sys.stdout.flush()
    # Streamlit replaces this process (same pid): a SIGTERM or SIGINT sent to `specdash serve` reaches the
    # server itself, and no orphaned child keeps serving the port.
    os.execve(sys.executable, command, env)
