"""The README and the manual say what specdash does: every session in them runs and prints what they show,
every file and link they name exists, and the CLI reference covers every command."""

import importlib
import re
import sys

import pytest

from tests.docs.sessions import (
    DOCS,
    REPO,
    blocks,
    commands,
    normalise,
    run,
    session_folder,
    unmatched,
)

pytestmark = pytest.mark.slow

PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
SESSION_PAGES = [page for page in PAGES if commands(page)]
FOREVER_COMMANDS = {"serve", "watch", "scrape"}
# a path inside the repository, as the pages write one in backticks
REPO_PATH = re.compile(
    r"`((?:app|bench|cli|costmodel|db|docs|ingest|migrations|specdash|tests|\.ci)/[\w./-]*)`"
)
# a Python name of specdash's, as the pages write one in backticks
PYTHON_NAME = re.compile(r"`((?:specdash\.)?(?:costmodel|db|ingest|app|cli)\.[\w.]+|specdash\.\w[\w.]*)`")
PLACEHOLDER = re.compile(r"NNNN|PAGE|NAME")  # migrations/versions/NNNN_what_it_does.py
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def page_id(page):
    return str(page.relative_to(REPO))


@pytest.mark.parametrize("page", SESSION_PAGES, ids=page_id)
def test_every_session_runs_and_prints_what_the_page_shows(page, tmp_path):
    url = f"sqlite:///{tmp_path}/page.db"
    with session_folder(tmp_path):
        for command in commands(page):
            assert command.program == "specdash", f"{command.where}: only specdash runs in a console block"
            if command.runs_forever:
                subcommand = command.args[0]
                assert subcommand in FOREVER_COMMANDS or "--follow" in command.args, command.where
                continue
            result = run(command, url)
            if result.exception and not isinstance(result.exception, SystemExit):
                raise result.exception
            assert result.exit_code == command.exit_code, (
                f"{command.where}: $ {command.text}\n{result.output}"
            )
            missing = unmatched(command.expected, result.output, url)
            assert not missing, (
                f"{command.where}: $ {command.text}\nthe page shows\n  {missing[0]}\nwhich it did not print "
                f"(in order); it printed\n{result.output}"
            )


def test_no_specdash_command_hides_outside_a_session():
    for page in PAGES:
        for block in blocks(page):
            if block.lang != "console":
                stray = [line for line in block.lines if line.startswith("$ specdash")]
                assert not stray, f"{page_id(page)}:{block.line}: a ```{block.lang} block runs {stray[0]!r}"


def test_a_shown_file_is_the_file():
    shown = [block for page in PAGES for block in blocks(page) if block.file]
    assert shown
    for block in shown:
        path = DOCS / block.file
        assert "\n".join(block.lines) == path.read_text().rstrip("\n"), f"{page_id(block.page)}:{block.line}"


def test_output_matching_tells_a_wrong_line():
    printed = "docs/a.json: 3 record(s) as specdash\n  2026-12-01 10:08 ana: open -> investigating"
    url = "sqlite:////tmp/x/page.db"
    assert (
        unmatched(["docs/a.json: 3 record(s) ...", "2026-12-31 23:59 ana: open -> ..."], printed, url) == []
    )
    assert unmatched(["docs/a.json: 4 record(s) ..."], printed, url) == ["docs/a.json: 4 record(s) ..."]
    # in order: a shown line cannot match a printed line above the previous match
    order = ["2026-12-01 10:08 ana: open -> investigating", "docs/a.json: 3 record(s) as specdash"]
    assert unmatched(order, printed, url) == order[1:]
    assert normalise(f"{url}: created", url) == "sqlite:///specdash.db: created"


def test_readme_is_a_front_door():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    pictures = re.findall(r"!\[[^\]]*\]\((docs/[\w.-]+\.png)\)", readme)
    assert len(pictures) == 2
    for command in ("make run", "make test", ".ci/run"):
        assert command in readme, command
    assert any(command.program == "specdash" for command in commands(REPO / "README.md"))


@pytest.mark.parametrize("page", [*PAGES, REPO / "CHANGELOG.md", REPO / "CONTRIBUTING.md"], ids=page_id)
def test_nothing_cites_what_the_repository_lacks(page):
    text = page.read_text()
    for outside in ("DESIGN.md", "STYLE.md", "shared/fixtures"):
        assert outside not in text, f"{page_id(page)} cites {outside}"
    assert not re.search(r"\.\.[/\\]shared\b", text), f"{page_id(page)} cites a folder beside the repository"
    for target in MARKDOWN_LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        # judged by its path alone: a link out of the repository fails without looking at what is there
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(REPO.resolve()), (
            f"{page_id(page)} links to {target}, outside the repository"
        )
        assert path.exists(), f"{page_id(page)} links to {target}, which is not in the repository"
    if page.name in ("CHANGELOG.md",):
        return  # history: it names what was there then
    for path in REPO_PATH.findall(text):
        if "..." in path or PLACEHOLDER.search(path):
            continue
        assert (REPO / path).exists(), f"{page_id(page)} names {path}, which is not in the repository"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_python_name_the_pages_give_exists(page):
    for name in PYTHON_NAME.findall(page.read_text()):
        dotted = name if name.startswith("specdash") else f"specdash.{name}"
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                found = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attribute in parts[cut:]:
                assert hasattr(found, attribute), f"{page_id(page)} names {name}: no {attribute}"
                found = getattr(found, attribute)
            break
        else:
            raise AssertionError(f"{page_id(page)} names {name}, which does not import")


def test_the_cli_reference_is_every_commands_help():
    from specdash.cli.main import COMMANDS

    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import cli_reference
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    reference = cli_reference.reference()
    assert cli_reference.MARKER in (DOCS / "cli.md").read_text()
    for name in COMMANDS:
        assert f"\n## specdash {name}\n" in reference, name
        assert f"Usage: specdash {name} [OPTIONS]" in reference, name
    assert "Usage: specdash [OPTIONS] COMMAND [ARGS]..." in reference
