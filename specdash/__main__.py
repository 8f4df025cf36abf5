from specdash.cli import command_line

command_line()
