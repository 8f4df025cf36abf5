"""`specdash serve`: the Streamlit dashboard on this database."""

import os
import sys
from importlib.resources import files

import click

from specdash.cli.common import db_option, db_url, open_db
from specdash.config import DB_URL_ENV


@click.command()
@click.option("--port", default=8501, show_default=True, help="Port to listen on.")
@click.option("--host", default="localhost", show_default=True, help="Address to listen on.")
@db_option
@click.pass_context
def serve(ctx: click.Context, port: int, host: str) -> None:
    """Start the dashboard on this database.

    \b
    Example:
      specdash serve --port 8501
    """
    engine = open_db(ctx)  # refuse an out-of-date schema before starting a server
    app = files("specdash.app").joinpath("main.py")
    env = dict(os.environ, **{DB_URL_ENV: db_url(ctx)})
    command = [
        sys.executable, "-m", "streamlit", "run", str(app),
        "--server.port", str(port),
        "--server.address", host,
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--client.toolbarMode", "viewer",
    ]
    where = engine.url.render_as_string(hide_password=True)
    click.echo(f"specdash dashboard on http://{host}:{port} (database {where})")
    sys.stdout.flush()
    # Streamlit replaces this process (same pid): a SIGTERM or SIGINT sent to `specdash serve` reaches the
    # server itself, and no orphaned child keeps serving the port.
    os.execve(sys.executable, command, env)
