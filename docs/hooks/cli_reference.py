"""mkdocs hook: fills docs/cli.md with every command's `--help`, read from the command itself at build
time, so the reference cannot drift from the code."""

from click.testing import CliRunner

MARKER = "<!-- cli-reference -->"
WIDTH = 100  # the help is wrapped as on a terminal this wide, whatever terminal runs the build


def command_help(args: list[str]) -> str:
    from specdash.cli.main import cli

    result = CliRunner().invoke(cli, [*args, "--help"], prog_name="specdash", terminal_width=WIDTH)
    if result.exit_code != 0:
        raise RuntimeError(f"specdash {' '.join(args)} --help exited {result.exit_code}: {result.output}")
    return result.output.rstrip()


def reference() -> str:
    from specdash.cli.main import COMMANDS

    sections = ["## specdash", "", "```text", command_help([]), "```"]
    for name in COMMANDS:
        sections += ["", f"## specdash {name}", "", "```text", command_help([name]), "```"]
    return "\n".join(sections)


def on_page_markdown(markdown: str, page, **_kwargs) -> str:
    if page.file.src_uri != "cli.md":
        return markdown
    if MARKER not in markdown:
        raise RuntimeError(f"docs/cli.md lost its {MARKER} line")
    return markdown.replace(MARKER, reference())
