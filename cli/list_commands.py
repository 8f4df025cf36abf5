"""`specdash ls`: the names other commands take (runs, checkpoints, deployments), one per row."""

import json

import click

from specdash.cli.common import db_option, open_db, shown
from specdash.db.engine import reading
from specdash.ingest.export import rows

# what each listing shows in a table (its JSON holds the same keys)
LISTED = {
    "runs": ("name", "target_model", "framework", "speculative_algorithm", "ttt_length", "checkpoints"),
    "checkpoints": ("run", "name", "step", "path"),
    "deployments": ("name", "gpu", "tp_size", "interconnect", "engine", "target_model"),
}


def table_text(columns: tuple[str, ...], records: list[dict]) -> str:
    """Aligned columns with a header; a value not stated is `-`."""
    lines = [columns] + [tuple("-" if r[c] is None else shown(r[c]) for c in columns) for r in records]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines
    )


@click.command(name="ls")
@click.argument("what", type=click.Choice(list(LISTED)))
@click.option("--run", help="Only the checkpoints of this run.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@db_option
@click.pass_context
def ls(ctx: click.Context, what: str, run: str | None, fmt: str) -> None:
    """List the stored runs, checkpoints or deployments by the names other commands take.

    \b
    Example:
      specdash ls deployments
      specdash ls checkpoints --run llama31-eagle3 --format json
    """
    columns = LISTED[what]
    engine = open_db(ctx)
    with reading(engine) as session:
        _, records = rows(session, what, run if what == "checkpoints" else None)
        listed = [{c: record[c] for c in columns} for record in records]
    if fmt == "json":
        click.echo(json.dumps(listed, indent=2))
    elif listed:
        click.echo(table_text(columns, listed))
    else:
        click.echo(f"no {what}" + (f" in run {run!r}" if run and what == "checkpoints" else ""))
