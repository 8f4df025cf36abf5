"""The changelog is in Keep a Changelog form, and its newest release is the version specdash says it is."""

import re
import tomllib
from datetime import date

from click.testing import CliRunner

import specdash
from specdash.cli.main import cli
from tests.conftest import REPO

RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)
KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def changelog() -> str:
    return (REPO / "CHANGELOG.md").read_text()


def test_specdash_version_is_the_newest_release():
    newest = RELEASE.search(changelog()).group(1)
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"specdash, version {newest}\n"
    assert specdash.__version__ == newest
    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"] == newest


def test_changelog_keeps_a_changelog():
    text = changelog()
    headings = re.findall(r"^## .*$", text, re.M)
    assert headings[0] == "## [Unreleased]"
    releases = [RELEASE.fullmatch(heading) for heading in headings[1:]]
    assert all(releases), [h for h, r in zip(headings[1:], releases, strict=True) if not r]
    versions = [tuple(int(part) for part in r.group(1).split(".")) for r in releases]
    dates = [date.fromisoformat(r.group(2)) for r in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert dates == sorted(dates, reverse=True)
    assert (0, 1, 0) in versions
    for kind in re.findall(r"^### (.*)$", text, re.M):
        assert kind in KINDS, kind
    # each release says what changed, under one of those headings
    for section in re.split(r"^## ", text, flags=re.M)[2:]:
        assert re.search(r"^### \w+\n\n- ", section, re.M), section.splitlines()[0]
