"""The package layout: specdash/ links to the top-level folders, and the wheel lists every package."""

import os
import tomllib

from tests.conftest import REPO

LINKED = ("answers", "app", "cli", "costmodel", "db", "ingest", "migrations")


def test_specdash_links_each_top_level_folder():
    for name in LINKED:
        link = REPO / "specdash" / name
        assert link.is_symlink(), f"specdash/{name} should be a link to ../{name}"
        assert os.readlink(link) == f"../{name}"


def test_every_package_on_disk_is_listed_for_the_wheel():
    """setuptools builds only the listed packages: a new folder left out would be missing from installs."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(os.path.relpath(folder, REPO).split(os.sep))
        for folder, dirs, files in os.walk(REPO / "specdash", followlinks=True)
        if "__init__.py" in files
    }
    assert "specdash.ingest.formats" in on_disk  # the walk went through the links
    assert on_disk == listed
