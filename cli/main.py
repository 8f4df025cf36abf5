"""Root of the `specdash` command group."""

import click

from specdash import __version__
from specdash.cli import (
    db_commands,
    export_commands,
    gap_commands,
    ingest_commands,
    model_commands,
    serve_command,
)
from specdash.cli.common import db_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="specdash")
@db_option
def cli() -> None:
    """Predicted vs measured decode throughput of speculative-decoding drafters.

    \b
    Start with:
      specdash init && specdash demo && specdash gaps
    """


for command in (
    db_commands.init,
    db_commands.demo,
    ingest_commands.ingest,
    ingest_commands.formats,
    export_commands.export,
    export_commands.schema,
    gap_commands.predict,
    gap_commands.gaps,
    gap_commands.check,
    model_commands.model,
    model_commands.calibrate,
    serve_command.serve,
):
    cli.add_command(command)
