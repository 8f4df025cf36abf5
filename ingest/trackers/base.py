"""What every tracker reader gives: its name, help, detect(path) and read(path, link)."""

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType

from specdash.ingest.formats.base import Located
from specdash.ingest.problems import Problem


@dataclass(frozen=True)
class TrackerReader:
    name: str
    help: str
    detect: Callable[[str], bool]
    read: Callable[..., Iterator["Located | Problem"]]


def extra_problem(path: str, package: str, extra: str = "trackers") -> Problem:
    return Problem(
        path,
        None,
        None,
        f"reading this needs the {package} package: pip install 'specdash[{extra}]'",
        "parse",
    )


def extra_module(name: str) -> ModuleType:
    """A module of an optional extra, imported when a reader first needs it (ImportError without the extra).
    tensorboardX ships no type information and protobuf modules make their classes at import: what a
    reader takes from them is untyped either way."""
    return importlib.import_module(name)
