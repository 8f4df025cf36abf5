"""Root of the `specdash` command group. Commands load on first use, so `specdash ingest` does not pay
for the dashboard's or the calibration's imports."""

import gc
import importlib

import click

from specdash import __version__
from specdash.cli.common import db_option

YOUNG_COLLECTION_OBJECTS = 20_000  # Python's default is 700

# command name -> "module:attribute" under specdash.cli
COMMANDS = {
    "init": "db_commands:init",
    "demo": "db_commands:demo",
    "changes": "db_commands:changes",
    "ingest": "ingest_commands:ingest",
    "formats": "ingest_commands:formats",
    "ls": "list_commands:ls",
    "export": "export_commands:export",
    "schema": "export_commands:schema",
    "predict": "gap_commands:predict",
    "gaps": "gap_commands:gaps",
    "check": "gap_commands:check",
    "alerts": "alert_commands:alerts",
    "alert": "alert_commands:alert",
    "advisories": "advisory_commands:advisories",
    "watch": "follow_commands:watch",
    "scrape": "scrape_commands:scrape",
    "model": "model_commands:model",
    "calibrate": "model_commands:calibrate",
    "schedule": "schedule_commands:schedule",
    "serve": "serve_command:serve",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attribute = target.split(":")
        command = getattr(importlib.import_module(f"specdash.cli.{module}"), attribute)
        if not gc.get_freeze_count():
            # what the imports built lives as long as the process: out of the collector's full walks, which a
            # long command (an ingest of a million points) would otherwise repeat over all of it, and at exit
            gc.freeze()
            # and the young objects a bulk load makes by the million (a tuple per logged step, mostly freed
            # or untracked at once) looked at in fewer, larger collections
            gc.set_threshold(YOUNG_COLLECTION_OBJECTS, *gc.get_threshold()[1:])
        gc.enable()  # paused while the modules loaded (specdash.cli.command_line)
        return command

    def invoke(self, ctx: click.Context):
        """Environment faults (database unreachable, disk full, lock held too long) end in one sentence
        saying what to fix, exit 1, never a traceback."""
        try:
            return super().invoke(ctx)
        except Exception as exc:  # noqa: BLE001 - re-raised below unless it is an environment fault
            from specdash.cli.common import db_url
            from specdash.db.faults import explain

            if isinstance(exc, click.ClickException | click.exceptions.Exit | click.exceptions.Abort):
                raise
            message = explain(exc, db_url(ctx))
            if message is None:
                raise
            raise click.ClickException(message) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="specdash")
@db_option
def cli() -> None:
    """Predicted vs measured decode throughput of speculative-decoding drafters.

    \b
    Start with:
      specdash init && specdash demo && specdash gaps
    """
