"""The `specdash` command line, and the entry point that starts it."""

import gc


def command_line() -> None:
    """`specdash`: the command group, its modules loaded with the collector paused. What they build lives
    as long as the process, so the collections the imports would trigger (a twentieth of a small ingest's
    CPU, walking ever more of them) find nothing to free; the group freezes it all and resumes the
    collector once the command is chosen (main.LazyGroup)."""
    gc.disable()
    from specdash.cli.main import cli

    cli(prog_name="specdash")
