"""`specdash init`, `specdash demo` and `specdash changes`."""

import json

import click

from specdash.cli.common import db_option, make_cli_engine, open_db, shown, text_table
from specdash.db.engine import reading
from specdash.db.schema import current_revision, revision_history, upgrade
from specdash.demo import DEMO_FILE_NAME, demo_bytes
from specdash.ingest.describe import describe
from specdash.ingest.pipeline import ingest
from specdash.ingest.sources import UploadSource
from specdash.masking import masked_url


@click.command()
@db_option
@click.pass_context
def init(ctx: click.Context) -> None:
    """Create the database, or upgrade it to the latest schema.

    \b
    Example:
      specdash init
      specdash --db sqlite:///team.db init
    """
    engine = make_cli_engine(ctx)
    before = current_revision(engine)
    history = revision_history()
    head = history[-1]
    where = masked_url(engine.url.render_as_string(hide_password=False))
    if before is not None and before not in history:
        raise click.ClickException(
            f"{where} is at schema revision {before}, which this specdash (schema {head}) does not know: "
            "it was written by a newer specdash; upgrade specdash instead of downgrading the database"
        )
    upgrade(engine)
    if before == head:
        click.echo(f"{where}: schema already at revision {head}")
    elif before is None:
        click.echo(f"{where}: created at schema revision {head}")
    else:
        click.echo(f"{where}: upgraded from revision {before} to {head}")


@click.command()
@click.option("--if-empty", is_flag=True, help="Load only into a database with no runs or benchmarks.")
@db_option
@click.pass_context
def demo(ctx: click.Context, if_empty: bool) -> None:
    """Load the demo data set (labelled demo): the PCIe/EAGLE story, a TTT-5 run, NVLink contrast.

    Running it twice adds nothing.

    \b
    Example:
      specdash demo
      specdash gaps --status open
    """
    engine = open_db(ctx)
    if if_empty:
        from specdash.db.queries import is_empty  # imports pandas: loaded by the commands that query

        with reading(engine) as session:
            if not is_empty(session):
                click.echo("database already has data; demo not loaded")
                return
    result = ingest(engine, UploadSource(DEMO_FILE_NAME, demo_bytes()))
    if not result.ok:  # the demo is ours: a failure here is a bug, shown in full
        raise click.ClickException("\n".join(str(p) for p in result.problems))
    click.echo(describe(result))


@click.command()
@click.option("--kind", help="Only changes to this kind of row (deployment, run, prediction, file, ...).")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
@click.pass_context
def changes(ctx: click.Context, kind: str | None, limit: int, fmt: str) -> None:
    """The change history, newest first: values `ingest --update` applied over stored ones, ingests
    replaced or undone, profiles, thresholds and calibrations saved, runs archived or deleted; with who
    made each (the login name here, the signed-in user on the dashboard).

    \b
    Example:
      specdash changes
      specdash changes --kind deployment --format json
    """
    from specdash.db.changes import recent_changes

    with reading(open_db(ctx)) as session:
        changes = recent_changes(session, limit, kind)
    if fmt == "json":
        # laid out as these commands have always written it ("key":value)
        click.echo(
            json.dumps([_change_record(change) for change in changes], indent=2, separators=(",", ":"))
        )
        return
    if not changes:
        click.echo("no changes recorded")
        return
    rows = [(f"{c.at:%Y-%m-%d %H:%M}", *c[1:]) for c in changes]
    # names and values from files as text: no escape sequence reaches the terminal
    click.echo(text_table(CHANGE_HEADER, [tuple(shown(cell) for cell in row) for row in rows]))


# what each change is called on the terminal and in JSON: "from" and "to" are Python keywords
CHANGE_HEADER = ("at", "who", "action", "kind", "subject", "field", "from", "to", "note")


def _change_record(change) -> dict:
    """A change as JSON: its time in ISO form to the millisecond, as the history has always been written."""
    values = (change.at.isoformat(timespec="milliseconds"), *change[1:])
    return dict(zip(CHANGE_HEADER, values, strict=True))
