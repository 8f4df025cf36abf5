"""What every command shares: the database option and opening a checked engine."""

import click
from sqlalchemy import Engine

from specdash.config import resolve_db_url
from specdash.db.engine import make_engine
from specdash.db.schema import SchemaOutOfDate, check_schema


def shown(text: object, newlines: bool = False) -> str:
    """Text from a file or the store as a terminal shows it: control characters (escape sequences, carriage
    returns, bidi overrides) written out as \\x1b-style escapes, so a name cannot clear the screen or forge a
    line. With newlines=True, line breaks between lines are kept."""
    text = str(text)
    if text.isprintable():
        return text
    if newlines:
        return "\n".join(shown(line) for line in text.split("\n"))
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text
    )


def _remember_db(ctx: click.Context, _param, value: str | None) -> str | None:
    if value:
        ctx.ensure_object(dict)["db_url"] = value
    return value


db_option = click.option(
    "--db",
    "db_url",
    metavar="URL",
    expose_value=False,
    callback=_remember_db,
    is_eager=True,
    help="Database URL (default: $SPECDASH_DB_URL, else sqlite:///specdash.db).",
)


def db_url(ctx: click.Context) -> str:
    return resolve_db_url(ctx.ensure_object(dict).get("db_url"))


def _lock_notice(message: str) -> None:
    click.echo(message, err=True)


def make_cli_engine(ctx: click.Context, lock_timeout: float | None = None) -> Engine:
    """The engine of a command: a write that waits for another writer's lock says so on stderr."""
    engine = make_engine(db_url(ctx), on_lock_wait=_lock_notice, lock_timeout=lock_timeout)
    ctx.call_on_close(engine.dispose)  # the command's connections close with it (in-process runs too)
    return engine


def open_db(ctx: click.Context, check: bool = True, lock_timeout: float | None = None) -> Engine:
    engine = make_cli_engine(ctx, lock_timeout)
    if check:
        try:
            check_schema(engine)
        except SchemaOutOfDate as exc:
            raise click.ClickException(str(exc)) from None
    return engine


def text_table(header: tuple[str, ...], rows: list[tuple]) -> str:
    """Rows as right-aligned columns under their header, one space apart (the layout `changes` and
    `alerts --group-by` have always printed); a number's column is one wider than its header."""
    cells = [tuple(str(cell) for cell in row) for row in rows]
    widths = [
        max([len(name) + (1 if rows and isinstance(rows[0][i], int) else 0), *(len(row[i]) for row in cells)])
        for i, name in enumerate(header)
    ]
    lines = [header, *cells]
    return "\n".join(
        " ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)) for line in lines
    )
