"""The terminal sessions of the manual, read from its Markdown and run against a fresh database.

The convention every page follows:

- A fenced ```console block is a session: each `$ specdash ...` line is a command, the lines under it up
  to the next `$` line are what it prints. Other programs (make, python -m bench, vllm) go in ```sh
  blocks, which are shown and not run.
- A page's sessions run in order, in one fresh SQLite database per page, from a folder holding the
  repository's `docs/` and `tests/`, so a file named `docs/examples/...` or `tests/fixtures/...` is the
  one in the repository.
- A comment at the end of a command line states what is not a plain success: `# exits 1: ...` expects
  that exit code; `# runs until Ctrl-C` (only `serve`, `watch`, `scrape` and `--follow`) is shown and not run.
- Shown output must match, in order, lines the command prints (other printed lines may lie between
  them): whitespace runs count as one space, dates and times as any date and time, `...` as any text,
  and the page's database as `sqlite:///specdash.db`.
- `<!-- file: examples/NAME -->` before a fenced block says the block is that file's content, verbatim.

`python -m tests.docs.sessions docs/PAGE.md` prints what each command of a page prints now, to paste.
"""

import os
import re
import shlex
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
FENCE = re.compile(r"^(\s*)```\s*([\w-]*)\s*$")
FILE_COMMENT = re.compile(r"^\s*<!--\s*file:\s*(\S+)\s*-->\s*$")
EXIT_COMMENT = re.compile(r"\bexits? (\d+)\b")
FOREVER_COMMENT = "runs until Ctrl-C"
TIME = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?")
SHOWN_DB_URL = "sqlite:///specdash.db"
# who a command-line change is recorded as (the login name): the pages' sessions are ana's
SESSION_USER = "ana"


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    lines: list[str]
    file: str | None = None  # the file the block shows, from a <!-- file: ... --> comment


@dataclass
class Command:
    page: Path
    line: int
    text: str  # the command line after "$ ", comment included
    program: str
    args: list[str]
    comment: str
    expected: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page
        return f"{page}:{self.line}"

    @property
    def exit_code(self) -> int:
        found = EXIT_COMMENT.search(self.comment)
        return int(found.group(1)) if found else 0

    @property
    def runs_forever(self) -> bool:
        return FOREVER_COMMENT in self.comment


def blocks(page: Path) -> list[Block]:
    found, current, pending_file = [], None, None
    for number, raw in enumerate(page.read_text().splitlines(), 1):
        fence = FENCE.match(raw)
        if current is None:
            comment = FILE_COMMENT.match(raw)
            if comment:
                pending_file = comment.group(1)
            elif fence:
                current = Block(page, number, fence.group(2), [], pending_file)
                indent = len(fence.group(1))
                pending_file = None
            elif raw.strip():
                pending_file = None
        elif fence and not fence.group(2):
            found.append(current)
            current = None
        else:
            # a fence indented inside a list: its lines carry the same indent
            current.lines.append(raw[indent:] if not raw[:indent].strip() else raw)
    assert current is None, f"{page}:{current.line}: fence never closed"
    return found


def split_comment(text: str) -> tuple[str, str]:
    """`specdash check  # exits 1` -> ("specdash check", "exits 1"): the first # outside quotes that
    starts a word."""
    quote = None
    for i, char in enumerate(text):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].rstrip(), text[i + 1 :].strip()
    return text.rstrip(), ""


def commands(page: Path) -> list[Command]:
    found = []
    for block in blocks(page):
        if block.lang != "console":
            continue
        current = None
        for offset, line in enumerate(block.lines, 1):
            if line.startswith("$ "):
                text = line[2:]
                command, comment = split_comment(text)
                words = shlex.split(command)
                current = Command(page, block.line + offset, text, words[0], words[1:], comment)
                found.append(current)
            elif current is not None:
                current.expected.append(line)
            elif line.strip():
                raise AssertionError(f"{page}:{block.line + offset}: output before any command")
    return found


def normalise(line: str, db_url: str) -> str:
    line = line.replace(db_url, SHOWN_DB_URL)
    line = TIME.sub("<time>", line)
    return " ".join(line.split())


def pattern(expected: str) -> re.Pattern:
    parts = [re.escape(part) for part in normalise(expected, "\0").split("...")]
    return re.compile(".*".join(parts))


def unmatched(expected: list[str], printed: str, db_url: str) -> list[str]:
    """The shown lines (after the first one that did not match) that the printed output lacks, in order."""
    actual = [normalise(line, db_url) for line in printed.splitlines()]
    position = 0
    for index, line in enumerate(expected):
        if not line.strip() or line.strip() == "...":
            continue
        wanted = pattern(line)
        for i in range(position, len(actual)):
            if wanted.fullmatch(actual[i]):
                position = i + 1
                break
        else:
            return expected[index:]
    return []


@contextmanager
def session_folder(tmp: Path):
    """A working folder where `docs/...` and `tests/...` are the repository's."""
    for name in ("docs", "tests"):
        (tmp / name).symlink_to(REPO / name)
    before = os.getcwd()
    os.chdir(tmp)
    try:
        yield tmp
    finally:
        os.chdir(before)


def run(command: Command, db_url: str):
    """The command in-process, as a terminal runs it; returns click's Result (stdout and stderr mixed)."""
    from click.testing import CliRunner

    from specdash.cli.main import cli

    env = {"USER": SESSION_USER, "LOGNAME": SESSION_USER, "COLUMNS": "200"}
    return CliRunner(env=env).invoke(cli, ["--db", db_url, *command.args], prog_name="specdash")


def main(paths: list[str]) -> None:
    import tempfile

    for path in paths:
        page = Path(path).resolve()
        with tempfile.TemporaryDirectory() as tmp, session_folder(Path(tmp)):
            url = f"sqlite:///{tmp}/page.db"
            for command in commands(page):
                print(f"$ {command.text}")
                if command.runs_forever or command.program != "specdash":
                    continue
                result = run(command, url)
                print(result.output.replace(url, SHOWN_DB_URL).rstrip())
                if result.exit_code != command.exit_code:
                    print(f"[{command.where}: exit {result.exit_code}, expected {command.exit_code}]")


if __name__ == "__main__":
    main(sys.argv[1:])
