"""`specdash export` and `specdash schema`."""

import json
import sys

import click

from specdash.cli.common import db_option, open_db
from specdash.db.engine import reading
from specdash.ingest.export import TABLES, rows, write_csv, write_json
from specdash.ingest.native_schema import KINDS, native_json_schema


@click.command()
@click.argument("table", type=click.Choice(sorted(TABLES)))
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("--run", help="Only rows of this run (all tables but deployments).")
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to FILE, not stdout."
)
@db_option
@click.pass_context
def export(ctx, table, fmt, run, output) -> None:
    """Write a stored table with names resolved: runs, checkpoints, deployments, benchmarks,
    predictions, gaps or metrics (long form: run, key, step, value).

    \b
    Example:
      specdash export benchmarks --format csv > benchmarks.csv
      specdash export metrics --run llama-eagle3 --format csv -o metrics.csv
    """
    engine = open_db(ctx)
    out = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout
    try:
        with reading(engine) as session:
            columns, records = rows(session, table, run)
            count = write_csv(columns, records, out) if fmt == "csv" else write_json(records, out)
    finally:
        if output:
            out.close()
    if output:
        click.echo(f"{output}: {count} {table} row(s)", err=True)


@click.command()
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    default="document",
    show_default=True,
    help="document, one JSONL line (any kind), or one record kind.",
)
def schema(kind) -> None:
    """Print the JSON Schema of specdash's own input format (what `specdash ingest` accepts as native).

    \b
    Example:
      specdash schema > specdash.schema.json
      specdash schema --kind benchmark
    """
    click.echo(json.dumps(native_json_schema(kind), indent=2))
