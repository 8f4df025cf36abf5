from specdash.cli.main import cli

cli(prog_name="specdash")
